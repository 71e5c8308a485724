package io.memwire.mainjob;

import io.memwire.localcluster.ExecutorCpu;
import io.memwire.localcluster.ProcessLines;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs the main job end to end, the way a user would: {@link ShuffleApp} submitted with {@code
 * spark-submit} (from the Spark runtime this module assembles out of Maven jars) to a local
 * multi-process cluster with Spark's own shuffle and with Memwire's (its jar on the driver's class
 * path and {@code spark.executor.extraClassPath}, the form that works on Spark 3.5 and 4.x alike),
 * alternately for a few rounds; checks that every run produced the reference's results and that
 * Memwire's remote bytes went one-sided, and prints medians, spreads and the fixed costs of a small
 * job.
 *
 * <pre>
 * MainJob --spark-home DIR --app-jar JAR --memwire-jar JAR [--records N] [--provider tcp]
 *         [--rounds 3] [--small-repeats 3] [--configs spark-sort,memwire] [--executors 2]
 *         [--work-dir DIR] [--timeout-minutes 20]
 * </pre>
 *
 * Configurations: {@code spark-sort} and {@code memwire}, each optionally with {@code -hostlocal}
 * (Spark's default {@code spark.shuffle.readHostLocalDisk=true}); without it both read blocks of
 * the other executor on this host through their transport, which is what a single-host run must do
 * to measure a transport at all. Exit status 0 when every run succeeded with identical results and
 * Memwire read its remote blocks one-sided; 1 otherwise.
 */
public final class MainJob {
  static final String MEMWIRE_MANAGER = "io.memwire.shuffle.RdmaShuffleManager";

  private MainJob() {}

  public static void main(String[] args) throws Exception {
    System.exit(run(args));
  }

  /** A configuration: its name and the spark-submit arguments that select it. */
  record Config(String name, List<String> args) {}

  static int run(String[] args) throws Exception {
    Path sparkHome = null;
    Path appJar = null;
    Path memwireJar = null;
    long records = 500_000;
    String provider = "tcp";
    int executors = 2;
    int rounds = 3;
    int smallRepeats = 3;
    String configNames = "spark-sort,memwire";
    Path workDir = Paths.get("target", "main-job");
    long timeoutMinutes = 20;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--spark-home" -> sparkHome = Paths.get(args[++i]);
        case "--app-jar" -> appJar = Paths.get(args[++i]);
        case "--memwire-jar" -> memwireJar = Paths.get(args[++i]);
        case "--records" -> records = Long.parseLong(args[++i]);
        case "--provider" -> provider = args[++i];
        case "--executors" -> executors = Integer.parseInt(args[++i]);
        case "--rounds" -> rounds = Integer.parseInt(args[++i]);
        case "--small-repeats" -> smallRepeats = Integer.parseInt(args[++i]);
        case "--configs" -> configNames = args[++i];
        case "--work-dir" -> workDir = Paths.get(args[++i]);
        case "--timeout-minutes" -> timeoutMinutes = Long.parseLong(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (sparkHome == null) {
      throw new IllegalArgumentException("--spark-home is required");
    }
    if (rounds < 1) {
      throw new IllegalArgumentException("--rounds must be at least 1, got " + rounds);
    }
    for (Path p : new Path[] {sparkHome.resolve("bin/spark-submit"), appJar, memwireJar}) {
      if (p == null || !Files.exists(p)) {
        throw new IllegalArgumentException(
            "missing " + p + ": build first with `mvn -B -DskipTests install`");
      }
    }
    List<Config> configs = configs(configNames, provider, memwireJar);
    Files.createDirectories(workDir);
    say(
        "Memwire main job: %,d records, %d executors (local-cluster), Memwire provider %s, %d"
            + " rounds of %s, order alternating",
        records, executors, provider, rounds, configs.stream().map(Config::name).toList());
    String master = "local-cluster[" + executors + ",1,1024]";
    Map<String, List<ShuffleAppResult>> results = new LinkedHashMap<>();
    configs.forEach(c -> results.put(c.name(), new ArrayList<>()));
    // One application per configuration, kept up across rounds: each pays its start and first job
    // once, and the rounds alternate between them.
    Map<String, Submission> apps = new LinkedHashMap<>();
    try {
      for (int round = 0; round < rounds; round++) {
        List<Config> order = new ArrayList<>(configs);
        // Alternate which manager goes first, so drift and warm page caches favour neither.
        java.util.Collections.rotate(order, -(round % configs.size()));
        for (Config c : order) {
          Path base = workDir.resolve("result-" + c.name() + ".json").toAbsolutePath();
          Path out = ShuffleApp.roundFile(base, round + 1);
          String tag = c.name() + " " + (round + 1) + "/" + rounds;
          long t0 = System.nanoTime();
          Submission app = apps.get(c.name());
          if (app == null) {
            for (int r = 1; r <= rounds; r++) {
              Files.deleteIfExists(ShuffleApp.roundFile(base, r));
            }
            List<String> cmd =
                command(sparkHome, master, c, appJar, records, smallRepeats, executors);
            cmd.addAll(List.of("--out", base.toString(), "--rounds", String.valueOf(rounds)));
            say("[%s] spark-submit %s", tag, String.join(" ", cmd.subList(2, cmd.size())));
            app = Submission.start(cmd, sparkHome, c.name());
            apps.put(c.name(), app);
          } else {
            try {
              app.nextRound();
            } catch (IOException e) {
              say("FAILED: %s: the application is gone (%s); see its output above", tag, e);
              return 1;
            }
          }
          if (!app.awaitFile(out, timeoutMinutes)) {
            say(
                "FAILED: %s: the application %s without a result; see its output above",
                tag, app.isAlive() ? "took over " + timeoutMinutes + " minutes" : "exited");
            return 1;
          }
          ShuffleAppResult r = ShuffleAppResult.read(out);
          results.get(c.name()).add(r);
          say(
              "[%s] %.1f s in all: main job %.2f s, later small jobs %.2f s; first small job"
                  + " %.2f s and executors ready after %.1f s (round 1)",
              tag,
              (System.nanoTime() - t0) / 1e9,
              r.wallSeconds(),
              r.smallWarmSeconds(),
              r.smallColdSeconds(),
              r.executorsReadySeconds());
        }
      }
      for (Map.Entry<String, Submission> e : apps.entrySet()) {
        int rc = e.getValue().finish(timeoutMinutes);
        if (rc != 0) {
          say("FAILED: %s exited %d at the end; see its output above", e.getKey(), rc);
          return 1;
        }
      }
    } finally {
      apps.values().forEach(Submission::kill);
    }
    return report(results, workDir);
  }

  /** The named configurations: spark-sort[-hostlocal], memwire[-hostlocal]. */
  static List<Config> configs(String names, String provider, Path memwireJar) {
    List<Config> out = new ArrayList<>();
    for (String raw : names.split(",")) {
      String name = raw.trim();
      boolean hostLocal = name.endsWith("-hostlocal");
      String base = hostLocal ? name.substring(0, name.length() - "-hostlocal".length()) : name;
      List<String> args =
          new ArrayList<>(List.of("--conf", "spark.shuffle.readHostLocalDisk=" + hostLocal));
      switch (base) {
        case "spark-sort" -> {}
        case "memwire" -> {
          // Spark 3.5 builds the shuffle manager before it adds --jars to an executor's class
          // loader: the jar goes on the executors' class path (the driver's: see command()).
          args.addAll(
              List.of(
                  "--conf",
                  "spark.executor.extraClassPath=" + memwireJar.toAbsolutePath(),
                  "--conf",
                  "spark.shuffle.manager=" + MEMWIRE_MANAGER,
                  "--conf",
                  "spark.shuffle.rdma.provider=" + provider));
          name = "memwire-" + provider + (hostLocal ? "-hostlocal" : "");
        }
        default ->
            throw new IllegalArgumentException(
                "--configs: unknown configuration '"
                    + raw
                    + "'; known: spark-sort, memwire, each optionally with -hostlocal (Spark's"
                    + " spark.shuffle.readHostLocalDisk=true: executors on one host read each other's"
                    + " files from disk)");
      }
      out.add(new Config(name, args));
    }
    if (out.isEmpty() || !out.get(0).name().startsWith("spark-sort")) {
      throw new IllegalArgumentException(
          "--configs: the first configuration is the reference"
              + " and must be spark-sort or spark-sort-hostlocal, got "
              + names);
    }
    return out;
  }

  /**
   * The Scala binary version of the Spark runtime in {@code sparkHome} (its {@code
   * scala-library-X.Y.Z.jar}); 2.13 when none is found.
   */
  static String scalaVersion(Path sparkHome) throws IOException {
    Pattern lib = Pattern.compile("scala-library-(\\d+\\.\\d+)\\..*\\.jar");
    try (var jars = Files.list(sparkHome.resolve("jars"))) {
      return jars.map(p -> lib.matcher(p.getFileName().toString()))
          .filter(Matcher::matches)
          .map(m -> m.group(1))
          .findFirst()
          .orElse("2.13");
    }
  }

  /** The spark-submit command of one configuration's application, up to its output options. */
  static List<String> command(
      Path sparkHome,
      String master,
      Config c,
      Path appJar,
      long records,
      int smallRepeats,
      int executors)
      throws java.net.URISyntaxException {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                "bash",
                sparkHome.resolve("bin/spark-submit").toAbsolutePath().toString(),
                "--master",
                master,
                "--conf",
                "spark.ui.enabled=false",
                "--conf",
                "spark.ui.showConsoleProgress=false"));
    cmd.addAll(c.args());
    // ExecutorCpu (local-cluster's jar) on the driver: the executors' CPU per GiB; and Memwire's
    // jar when the executors have it (the driver builds its shuffle manager too).
    String driverClassPath =
        Paths.get(ExecutorCpu.class.getProtectionDomain().getCodeSource().getLocation().toURI())
            .toString();
    for (int i = 0; i + 1 < c.args().size(); i++) {
      String a = c.args().get(i + 1);
      if (c.args().get(i).equals("--conf") && a.startsWith("spark.executor.extraClassPath=")) {
        driverClassPath += java.io.File.pathSeparator + a.substring(a.indexOf('=') + 1);
      }
    }
    cmd.addAll(List.of("--driver-class-path", driverClassPath));
    cmd.addAll(
        List.of(
            "--class",
            ShuffleApp.class.getName(),
            appJar.toAbsolutePath().toString(),
            "--records",
            String.valueOf(records),
            "--small-repeats",
            String.valueOf(smallRepeats),
            "--wait-executors",
            String.valueOf(executors)));
    return cmd;
  }

  /**
   * One configuration's application, up for all rounds: its output is relayed with a tag by a
   * daemon thread; a line on its standard input starts its next round, end of input ends it.
   */
  static final class Submission {
    private final Process process;
    private final Thread pump;
    private final java.io.Writer input;

    private Submission(Process process, Thread pump) {
      this.process = process;
      this.pump = pump;
      this.input =
          new java.io.OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    }

    static Submission start(List<String> cmd, Path sparkHome, String tag) throws IOException {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      pb.environment().put("SPARK_HOME", sparkHome.toAbsolutePath().toString());
      pb.environment().put("SPARK_SCALA_VERSION", scalaVersion(sparkHome));
      pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
      Process p = pb.start();
      Thread pump =
          ProcessLines.follow(
              p,
              "main-job-output-" + tag,
              line -> System.out.println("  [" + tag + "] " + line),
              ended -> {}); // the output ends with the process
      return new Submission(p, pump);
    }

    void nextRound() throws IOException {
      input.write("next\n");
      input.flush();
    }

    boolean isAlive() {
      return process.isAlive();
    }

    /** Waits for {@code file} while the application runs; false if it exited or time ran out. */
    boolean awaitFile(Path file, long timeoutMinutes) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(timeoutMinutes);
      while (!Files.exists(file)) {
        if (!process.isAlive() || System.nanoTime() > deadline) {
          return Files.exists(file);
        }
        process.waitFor(100, TimeUnit.MILLISECONDS);
      }
      return true;
    }

    /** Ends its input and waits for it to exit; its exit status (124 after the timeout). */
    int finish(long timeoutMinutes) throws IOException, InterruptedException {
      input.close();
      if (!process.waitFor(timeoutMinutes, TimeUnit.MINUTES)) {
        return 124;
      }
      pump.join(10_000);
      return process.exitValue();
    }

    /** Stops it and everything it started, if still running. */
    void kill() {
      if (process.isAlive()) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
      }
    }
  }

  /**
   * Prints medians and spreads per configuration and the fixed costs of a small job, checks that
   * every run gave the reference's results and that Memwire's remote bytes went one-sided; returns
   * the exit status.
   */
  static int report(Map<String, List<ShuffleAppResult>> results, Path workDir) throws IOException {
    List<String> names = new ArrayList<>(results.keySet());
    String refName = names.get(0);
    ShuffleAppResult ref = results.get(refName).get(0);
    int status = 0;
    for (Map.Entry<String, List<ShuffleAppResult>> run : results.entrySet()) {
      for (ShuffleAppResult r : run.getValue()) {
        if (!r.resultDigest().equals(ref.resultDigest())
            || r.resultRows() != ref.resultRows()
            || !r.smallDigest().equals(ref.smallDigest())) {
          say(
              "RESULTS DIFFER: %s gave %s / %s, %s gave %s / %s",
              run.getKey(),
              r.resultDigest(),
              r.smallDigest(),
              refName,
              ref.resultDigest(),
              ref.smallDigest());
          status = 1;
        }
      }
    }
    StringBuilder t = new StringBuilder();
    t.append(
        String.format(
            Locale.ROOT,
            "%n%-22s %6s %18s %8s %11s %11s %10s %10s %10s %10s%n",
            "shuffle",
            "runs",
            "main job s",
            "vs sort",
            "first small",
            "later small",
            "exec ready",
            "remote MB",
            "one-sided",
            "fetch wait"));
    t.append(
        String.format(
            Locale.ROOT,
            "%-22s %6s %18s %8s %11s %11s %10s %10s %10s %10s%n",
            "",
            "",
            "median (min-max)",
            "median",
            "job s",
            "job s",
            "s",
            "",
            "MB",
            "ms"));
    double refWall = median(results.get(refName), ShuffleAppResult::wallSeconds);
    for (String name : names) {
      List<ShuffleAppResult> rs = results.get(name);
      double wall = median(rs, ShuffleAppResult::wallSeconds);
      boolean counters = rs.stream().allMatch(ShuffleAppResult::managerCounters);
      t.append(
          String.format(
              Locale.ROOT,
              "%-22s %6d %7.2f (%.2f-%.2f) %8.2f %11.2f %11.2f %10.1f %10.1f %10s %10.0f%n",
              name,
              rs.size(),
              wall,
              min(rs, ShuffleAppResult::wallSeconds),
              max(rs, ShuffleAppResult::wallSeconds),
              wall / refWall,
              median(rs, ShuffleAppResult::smallColdSeconds),
              median(rs, ShuffleAppResult::smallWarmSeconds),
              median(rs, ShuffleAppResult::executorsReadySeconds),
              median(rs, ShuffleAppResult::remoteBytesRead) / 1e6,
              counters
                  ? String.format(
                      Locale.ROOT, "%.1f", median(rs, ShuffleAppResult::oneSidedBytes) / 1e6)
                  : "-",
              median(rs, ShuffleAppResult::fetchWaitMs)));
    }
    List<Double> ratios = new ArrayList<>();
    String memwireName =
        names.stream().filter(n -> n.startsWith("memwire")).findFirst().orElse(null);
    if (memwireName != null && results.get(memwireName).size() == results.get(refName).size()) {
      for (int i = 0; i < results.get(refName).size(); i++) {
        ratios.add(
            results.get(memwireName).get(i).wallSeconds()
                / results.get(refName).get(i).wallSeconds());
      }
      t.append(
          String.format(
              Locale.ROOT,
              "%nmain job wall ratio %s/%s per round: %s%n",
              memwireName,
              refName,
              ratios.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList()));
      t.append(cpuPerGiB(results.get(refName), results.get(memwireName)));
      t.append(fixedCosts(results.get(refName), results.get(memwireName)));
    }
    System.out.print(t);
    Files.writeString(workDir.resolve("comparison.txt"), t.toString());
    for (String name : names) {
      if (!name.startsWith("memwire")) {
        continue;
      }
      for (ShuffleAppResult r : results.get(name)) {
        long remote = r.allRemoteBytes();
        long oneSided = r.allOneSidedBytes();
        if (r.remoteBytesRead() <= 0) {
          say("FAILED: the %s run read no remote shuffle bytes", name);
          status = 1;
        } else if (!r.managerCounters()
            || oneSided < remote
            || r.allFallbackBlocks() > 0
            || r.allFailedBlocks() > 0) {
          say(
              "PATH CHECK FAILED: %s: Spark read %,d remote bytes, Memwire %,d of them one-sided,"
                  + " %d fallback blocks",
              name, remote, oneSided, r.allFallbackBlocks());
          status = 1;
        }
      }
    }
    if (status == 0) {
      say(
          "results identical in every run: %,d rows, digest %s; every remote byte of the"
              + " Memwire runs went one-sided",
          ref.resultRows(), ref.resultDigest());
    }
    return status;
  }

  /**
   * The executors' CPU per GiB of remote bytes in the main job, medians and ratios: serving threads
   * (Spark's Netty server; Memwire's tcp loops, which also receive), all transport threads (plus
   * Spark's Netty client), whole executor JVMs.
   */
  static String cpuPerGiB(List<ShuffleAppResult> sort, List<ShuffleAppResult> memwire) {
    if (median(sort, ShuffleAppResult::executorCpuMsPerGiB) < 0
        || median(memwire, ShuffleAppResult::executorCpuMsPerGiB) < 0) {
      return String.format(
          Locale.ROOT,
          "%nexecutor CPU: not measured (needs Linux /proc and"
              + " executors started by the driver)%n");
    }
    StringBuilder s =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "%nexecutor CPU per GiB of remote bytes, main job (medians, ms/GiB):%n"));
    Map<String, ToDoubleFunction<ShuffleAppResult>> groups = new LinkedHashMap<>();
    groups.put("serving", ShuffleAppResult::servingCpuMsPerGiB);
    groups.put("transport", ShuffleAppResult::transportCpuMsPerGiB);
    groups.put("executor", ShuffleAppResult::executorCpuMsPerGiB);
    for (Map.Entry<String, ToDoubleFunction<ShuffleAppResult>> g : groups.entrySet()) {
      String k = g.getKey();
      double a = median(sort, g.getValue());
      double b = median(memwire, g.getValue());
      s.append(
          String.format(
              Locale.ROOT, "  %-9s sort %8.0f, memwire %8.0f, ratio %.2f%n", k, a, b, b / a));
    }
    return s.toString();
  }

  /** What a small job pays with Memwire beyond Spark's shuffle, and which part remains. */
  static String fixedCosts(List<ShuffleAppResult> sort, List<ShuffleAppResult> memwire) {
    double ready =
        median(memwire, ShuffleAppResult::executorsReadySeconds)
            - median(sort, ShuffleAppResult::executorsReadySeconds);
    double first =
        median(memwire, ShuffleAppResult::smallColdSeconds)
            - median(sort, ShuffleAppResult::smallColdSeconds);
    double later =
        median(memwire, ShuffleAppResult::smallWarmSeconds)
            - median(sort, ShuffleAppResult::smallWarmSeconds);
    double firstExtra = first - later;
    ShuffleAppResult m = memwire.get(memwire.size() - 1);
    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "%nfixed costs of a small job (16,000 records, medians,"
                + " Memwire minus Spark's sort shuffle):%n"));
    s.append(
        String.format(
            Locale.ROOT,
            "  executor start (transfer node start, before any job):" + " %+.2f s%n",
            ready));
    s.append(
        String.format(
            Locale.ROOT,
            "  first small job, beyond a later one (JIT of the read"
                + " path, first connections: %d open): %+.2f s; directory slot reads %d, index reads"
                + " %d%n",
            m.openConnections(),
            firstExtra,
            m.cold().slotReads(),
            m.cold().indexReads()));
    s.append(
        String.format(
            Locale.ROOT,
            "  every later small job: %+.2f s; per job %d map"
                + " outputs registered and mapped, %d directory slot reads, %d index reads, %d index"
                + " cache hits, %d one-sided fetch requests (first block after %.0f us on average)%n",
            later,
            m.warm().outputsPublished(),
            m.warm().slotReads(),
            m.warm().indexReads(),
            m.warm().indexCacheHits(),
            m.warm().fetchRequests(),
            m.warm().fetchRequests() == 0
                ? 0.0
                : (double) m.warm().firstBlockMicros() / m.warm().fetchRequests()));
    s.append(
        String.format(
            Locale.ROOT,
            "  remains in every small job: %+.2f s (%s); paid once"
                + " per executor: %+.2f s at start and %+.2f s in its first job%n",
            later,
            Math.abs(later) < 0.05
                ? "within noise"
                : later > 0
                    ? "registrations, directory and index" + " reads"
                    : "none: Memwire is faster",
            ready,
            firstExtra));
    return s.toString();
  }

  static double median(List<ShuffleAppResult> rs, ToDoubleFunction<ShuffleAppResult> key) {
    List<Double> v = new ArrayList<>(rs.stream().map(key::applyAsDouble).toList());
    v.sort(Double::compare);
    return ShuffleApp.median(v);
  }

  static double min(List<ShuffleAppResult> rs, ToDoubleFunction<ShuffleAppResult> key) {
    return rs.stream().mapToDouble(key).min().orElse(Double.NaN);
  }

  static double max(List<ShuffleAppResult> rs, ToDoubleFunction<ShuffleAppResult> key) {
    return rs.stream().mapToDouble(key).max().orElse(Double.NaN);
  }

  static void say(String fmt, Object... args) {
    System.out.println(String.format(Locale.ROOT, fmt, args));
    System.out.flush();
  }
}
