package io.memwire.tools.diagnose;

import io.memwire.tools.doctor.Doctor;
import io.memwire.transfer.fabric.CounterDeltas;
import io.memwire.transfer.fabric.CounterKey;
import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.FabricReport;
import io.memwire.transfer.fabric.NicCounters;
import io.memwire.transfer.fabric.SysfsRoot;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * {@code memwire diagnose}: writes one text file for a bug report or an on-call engineer, with
 * versions (Memwire, Java, OS and kernel, libdisni and UCX presence), the settings in effect, the
 * doctor's checks, the NIC counters (two samples and their rates), the shuffle service's health and
 * registered memory and connections (its HTTP {@code /metrics} and {@code /health}, when an address
 * is given and answers) and the last errors of a log file. It runs anywhere, also on a node without
 * RDMA, and ends with what it could not read. Exit code 0 once the file is written, 2 on bad
 * arguments.
 *
 * <pre>
 * memwire diagnose [--out FILE] [--service HOST:PORT] [--log FILE] [--interval SECONDS]
 *                  [--sysfs DIR] [-- doctor options...]
 * </pre>
 */
public final class Diagnose {
  static final String USAGE =
      "usage: memwire diagnose [--out FILE] [--service HOST:PORT] [--log FILE]"
          + " [--interval SECONDS] [--sysfs DIR] [-- doctor options...]";

  /** Most log lines quoted. */
  static final int LOG_LINES = 60;

  private static final Pattern LOG_PROBLEM =
      Pattern.compile("\\b(ERROR|WARN|FATAL|SEVERE)\\b|Exception|Caused by");

  private final List<String> unread = new ArrayList<>();

  private Diagnose() {}

  public static void main(String[] args) {
    System.exit(run(args, System.out));
  }

  /** Writes the report; returns the exit code. */
  public static int run(String[] args, PrintStream console) {
    DiagnoseOptions o;
    try {
      o = DiagnoseOptions.parse(args);
    } catch (DiagnoseOptions.Help h) {
      console.println(USAGE);
      return 0;
    } catch (IllegalArgumentException e) {
      console.println(e.getMessage());
      return 2;
    }
    Path out = o.out() != null ? o.out() : defaultOut();
    String report =
        new Diagnose()
            .report(new SysfsRoot(o.sysfs()), o.interval(), o.service(), o.log(), o.doctorArgs());
    try {
      Files.writeString(out, report);
    } catch (IOException e) {
      console.println("cannot write " + out + ": " + e.getMessage());
      return 2;
    }
    console.println("memwire diagnose: wrote " + out.toAbsolutePath());
    return 0;
  }

  /** memwire-diagnose-HOST-yyyyMMdd-HHmmss.txt in the working directory. */
  private static Path defaultOut() {
    return Path.of(
        "memwire-diagnose-"
            + host()
            + "-"
            + DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")
                .withZone(ZoneOffset.UTC)
                .format(Instant.now())
            + ".txt");
  }

  String report(
      SysfsRoot sysfs, double interval, String service, Path log, List<String> doctorArgs) {
    StringBuilder r = new StringBuilder();
    r.append("# memwire diagnose\n")
        .append("host ")
        .append(host())
        .append(", ")
        .append(Instant.now())
        .append("\n");
    section(r, "versions");
    versions(r);
    section(r, "settings in effect");
    settings(r);
    section(r, "doctor");
    doctor(r, doctorArgs);
    section(r, "NIC counters");
    counters(r, sysfs, interval);
    section(r, "shuffle service");
    ServiceSection.append(r, service, unread);
    section(r, "last errors");
    lastErrors(r, log);
    section(r, "could not read");
    if (unread.isEmpty()) {
      r.append("nothing: every part above was read\n");
    } else {
      unread.forEach(u -> r.append("- ").append(u).append('\n'));
    }
    return r.toString();
  }

  private static void section(StringBuilder r, String name) {
    r.append("\n## ").append(name).append("\n\n");
  }

  private void versions(StringBuilder r) {
    r.append("memwire ").append(memwireVersion()).append('\n');
    r.append("java ")
        .append(System.getProperty("java.version"))
        .append(" (")
        .append(System.getProperty("java.vendor"))
        .append(", ")
        .append(System.getProperty("java.vm.name"))
        .append(") at ")
        .append(System.getProperty("java.home"))
        .append('\n');
    r.append("os ")
        .append(System.getProperty("os.name"))
        .append(' ')
        .append(System.getProperty("os.version"))
        .append(' ')
        .append(System.getProperty("os.arch"))
        .append('\n');
    String kernel = read(Path.of("/proc/version"), "kernel version (/proc/version)");
    if (kernel != null) {
      r.append("kernel ").append(kernel.strip()).append('\n');
    }
    String libPath = System.getProperty("java.library.path", "");
    r.append("libdisni ")
        .append(find(libPath, System.mapLibraryName("disni")).orElse("absent"))
        .append(" (java.library.path and the system library directories)\n");
    r.append("UCX libucp ").append(find(libPath, "libucp.so").orElse("absent")).append('\n');
  }

  /** The jar's version: its manifest's, else from the jar's file name. */
  static String memwireVersion() {
    String v = Diagnose.class.getPackage().getImplementationVersion();
    if (v != null) {
      return v;
    }
    try {
      String jar =
          Path.of(Diagnose.class.getProtectionDomain().getCodeSource().getLocation().toURI())
              .getFileName()
              .toString();
      var m = Pattern.compile("memwire-transfer-tools-(.+)\\.jar").matcher(jar);
      return m.matches() ? m.group(1) : "unknown (classes not from a jar: " + jar + ")";
    } catch (Exception e) { // any failure only means the version is unknown
      return "unknown";
    }
  }

  private static java.util.Optional<String> find(String libraryPath, String file) {
    List<String> dirs = new ArrayList<>(List.of(libraryPath.split(java.io.File.pathSeparator)));
    dirs.addAll(
        List.of(
            "/usr/lib",
            "/usr/lib64",
            "/usr/local/lib",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu"));
    for (String d : dirs) {
      if (d.isEmpty()) {
        continue;
      }
      Path p = Path.of(d).resolve(file);
      if (Files.exists(p)) {
        return java.util.Optional.of(p.toString());
      }
    }
    return java.util.Optional.empty();
  }

  private static void settings(StringBuilder r) {
    Map<String, String> s = new TreeMap<>();
    for (String k : System.getProperties().stringPropertyNames()) {
      if (k.startsWith("memwire.") || k.startsWith("spark.shuffle.rdma.")) {
        s.put("-D" + k, redact(k, System.getProperty(k)));
      }
    }
    System.getenv()
        .forEach(
            (k, v) -> {
              if (k.startsWith("MEMWIRE_") || k.equals("SPARK_HOME") || k.equals("JAVA_HOME")) {
                s.put("$" + k, redact(k, v));
              }
            });
    if (s.isEmpty()) {
      r.append("no memwire.* system property or MEMWIRE_* variable set: defaults\n");
    }
    s.forEach((k, v) -> r.append(k).append('=').append(v).append('\n'));
  }

  /** Secrets never go into a report. */
  static String redact(String key, String value) {
    String k = key.toLowerCase(Locale.ROOT);
    return k.contains("secret") || k.contains("password") || k.contains("token")
        ? "(set, not shown)"
        : value;
  }

  private void doctor(StringBuilder r, List<String> args) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream ps = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    int code;
    try {
      code = Doctor.run(args.toArray(String[]::new), ps);
    } catch (RuntimeException | LinkageError e) {
      unread.add("the doctor's checks: " + e);
      r.append("the doctor failed: ").append(e).append('\n');
      return;
    }
    r.append(bytes.toString(StandardCharsets.UTF_8))
        .append("(doctor exit code ")
        .append(code)
        .append(")\n");
  }

  private void counters(StringBuilder r, SysfsRoot sysfs, double interval) {
    NicCounters nic = new NicCounters(sysfs, System::nanoTime);
    CounterSample first = nic.sample();
    if (first.noDevices()) {
      r.append("no RDMA device on this node (")
          .append(sysfs.infiniband())
          .append(" is missing or empty): no NIC counters\n");
      unread.add("NIC counters: no RDMA device under " + sysfs.infiniband());
      return;
    }
    try {
      Thread.sleep((long) (interval * 1000)); // the interval the rates are taken over
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    CounterSample second = nic.sample();
    CounterDeltas d = second.since(first);
    r.append(
        String.format(
            Locale.ROOT,
            "two samples %.1f s apart (%s, %s)%n",
            d.seconds(),
            first.at(),
            second.at()));
    FabricReport.lines(d).forEach(l -> r.append(l).append('\n'));
    r.append('\n')
        .append(
            String.format(
                Locale.ROOT,
                "%-44s %20s %14s %14s %s%n",
                "counter",
                "value",
                "delta",
                "per second",
                "kind"));
    for (Map.Entry<CounterKey, Long> e : second.values().entrySet()) {
      CounterKey k = e.getKey();
      r.append(
          String.format(
              Locale.ROOT,
              "%-44s %20s %14d %14.1f %s%n",
              k.where() + "/" + k.group() + "/" + k.name(),
              Long.toUnsignedString(e.getValue()),
              d.get(k),
              d.rate(k),
              FabricReport.kind(k.name()).label()
                  + (k.inFourOctets() ? " (delta in octets; value in 4-octet units)" : "")));
    }
    for (String u : second.unreadable()) {
      unread.add("NIC counter " + u);
    }
  }

  private void lastErrors(StringBuilder r, Path log) {
    if (log == null) {
      r.append("no --log FILE given\n");
      unread.add("a log: no --log FILE given");
      return;
    }
    Deque<String> last = new ArrayDeque<>();
    long total = 0;
    try (Stream<String> lines = Files.lines(log, StandardCharsets.UTF_8)) {
      for (String l : (Iterable<String>) lines::iterator) {
        if (LOG_PROBLEM.matcher(l).find()) {
          total++;
          last.addLast(l);
          if (last.size() > LOG_LINES) {
            last.removeFirst();
          }
        }
      }
    } catch (IOException | UncheckedIOException e) {
      unread.add("the log " + log + ": " + e.getMessage());
      r.append("cannot read ").append(log).append('\n');
      return;
    }
    r.append(total)
        .append(" error or warning line(s) in ")
        .append(log)
        .append(total > LOG_LINES ? ", the last " + LOG_LINES : "")
        .append(":\n");
    last.forEach(l -> r.append(l).append('\n'));
  }

  private String read(Path f, String what) {
    try {
      return Files.readString(f);
    } catch (IOException e) {
      unread.add(what + ": " + e.getMessage());
      return null;
    }
  }

  private static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "unknown-host";
    }
  }
}
