package io.memwire.mainjob;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs the main job end to end, the way a user would: {@link ShuffleApp} submitted with {@code
 * spark-submit} (from the Spark runtime this module assembles out of Maven jars) to a local
 * multi-process cluster, once with Memwire's shuffle manager (passed with {@code --jars}) and once
 * with Spark's own; checks that both produced identical results and prints a comparison.
 *
 * <pre>
 * MainJob --spark-home DIR --app-jar JAR --memwire-jar JAR [--records N] [--provider tcp]
 *         [--executors 2] [--work-dir DIR] [--timeout-minutes 20]
 * </pre>
 *
 * Exit status 0 when both runs succeeded with identical results and Memwire read remote blocks;
 * 1 otherwise.
 */
public final class MainJob {
  static final String MEMWIRE_MANAGER = "io.memwire.shuffle.RdmaShuffleManager";

  /** One run's figures, parsed from the application's result line. */
  static final class Result {
    final String name;
    final Map<String, String> values;

    Result(String name, Map<String, String> values) {
      this.name = name;
      this.values = values;
    }

    double number(String key) {
      return Double.parseDouble(values.getOrDefault(key, "0"));
    }

    String text(String key) {
      return values.getOrDefault(key, "");
    }
  }

  private MainJob() {}

  public static void main(String[] args) throws Exception {
    System.exit(run(args));
  }

  static int run(String[] args) throws Exception {
    Path sparkHome = null;
    Path appJar = null;
    Path memwireJar = null;
    long records = 500_000;
    String provider = "tcp";
    int executors = 2;
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
        case "--work-dir" -> workDir = Paths.get(args[++i]);
        case "--timeout-minutes" -> timeoutMinutes = Long.parseLong(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (sparkHome == null) {
      throw new IllegalArgumentException("--spark-home is required");
    }
    for (Path p : new Path[] {sparkHome.resolve("bin/spark-submit"), appJar, memwireJar}) {
      if (p == null || !Files.exists(p)) {
        throw new IllegalArgumentException("missing " + p
            + ": build first with `mvn -B -DskipTests install`");
      }
    }
    Files.createDirectories(workDir);
    say("Memwire main job: %,d records, %d executors (local-cluster), Memwire provider %s",
        records, executors, provider);
    String master = "local-cluster[" + executors + ",1,1024]";
    List<Result> results = new ArrayList<>();
    Map<String, List<String>> configs = new LinkedHashMap<>();
    configs.put("spark-sort", List.of());
    configs.put("memwire-" + provider, List.of(
        "--jars", memwireJar.toAbsolutePath().toString(),
        "--conf", "spark.shuffle.manager=" + MEMWIRE_MANAGER,
        "--conf", "spark.shuffle.rdma.provider=" + provider));
    for (Map.Entry<String, List<String>> c : configs.entrySet()) {
      Path out = workDir.resolve("result-" + c.getKey() + ".json").toAbsolutePath();
      Files.deleteIfExists(out);
      List<String> cmd = new ArrayList<>(List.of("bash",
          sparkHome.resolve("bin/spark-submit").toAbsolutePath().toString(),
          "--master", master,
          "--conf", "spark.shuffle.readHostLocalDisk=false",
          "--conf", "spark.ui.enabled=false",
          "--conf", "spark.ui.showConsoleProgress=false"));
      cmd.addAll(c.getValue());
      cmd.addAll(List.of("--class", ShuffleApp.class.getName(),
          appJar.toAbsolutePath().toString(), "--records", String.valueOf(records),
          "--wait-executors", String.valueOf(executors),
          "--out", out.toString()));
      say("[%s] spark-submit %s", c.getKey(), String.join(" ", cmd.subList(2, cmd.size())));
      long t0 = System.nanoTime();
      int rc = submit(cmd, sparkHome, c.getKey(), timeoutMinutes);
      say("[%s] finished in %.1f s (exit %d)", c.getKey(), (System.nanoTime() - t0) / 1e9, rc);
      if (rc != 0 || !Files.exists(out)) {
        say("FAILED: %s run exited %d without a result; see its output above", c.getKey(), rc);
        return 1;
      }
      results.add(new Result(c.getKey(), parse(Files.readString(out))));
    }
    return report(results, workDir);
  }

  static int submit(List<String> cmd, Path sparkHome, String tag, long timeoutMinutes)
      throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("SPARK_HOME", sparkHome.toAbsolutePath().toString());
    pb.environment().put("SPARK_SCALA_VERSION", "2.13");
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    Process p = pb.start();
    Thread pump = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          System.out.println("  [" + tag + "] " + line);
        }
      } catch (IOException e) {
        // process ended
      }
    }, "main-job-output");
    pump.setDaemon(true);
    pump.start();
    if (!p.waitFor(timeoutMinutes, TimeUnit.MINUTES)) {
      say("[%s] did not finish within %d minutes: stopping it", tag, timeoutMinutes);
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      p.waitFor(30, TimeUnit.SECONDS);
      return 124;
    }
    pump.join(10_000);
    return p.exitValue();
  }

  static Map<String, String> parse(String json) {
    Map<String, String> m = new LinkedHashMap<>();
    Matcher x = Pattern.compile("\"(\\w+)\":(\"([^\"]*)\"|[-0-9.eE]+)").matcher(json);
    while (x.find()) {
      m.put(x.group(1), x.group(3) != null ? x.group(3) : x.group(2));
    }
    return m;
  }

  static int report(List<Result> results, Path workDir) throws IOException {
    Result base = results.get(0);
    StringBuilder t = new StringBuilder();
    t.append(String.format(Locale.ROOT, "%n%-16s %9s %8s %12s %12s %12s %12s %10s%n", "shuffle",
        "wall s", "vs sort", "written MB", "remote MB", "local MB", "fetch wait", "rows"));
    for (Result r : results) {
      t.append(String.format(Locale.ROOT, "%-16s %9.2f %8.2f %12.1f %12.1f %12.1f %10.0fms %10.0f%n",
          r.name, r.number("wallSeconds"), r.number("wallSeconds") / base.number("wallSeconds"),
          r.number("shuffleBytesWritten") / 1e6, r.number("remoteBytesRead") / 1e6,
          r.number("localBytesRead") / 1e6, r.number("fetchWaitMs"), r.number("resultRows")));
    }
    System.out.print(t);
    Files.writeString(workDir.resolve("comparison.txt"), t.toString());
    boolean same = results.stream().allMatch(r ->
        r.text("resultDigest").equals(base.text("resultDigest"))
            && r.number("resultRows") == base.number("resultRows"));
    Result memwire = results.get(results.size() - 1);
    if (!same) {
      say("RESULTS DIFFER: %s", results.stream()
          .map(r -> r.name + "=" + r.text("resultDigest")).toList());
      return 1;
    }
    say("results identical: %,.0f rows, digest %s", base.number("resultRows"),
        base.text("resultDigest"));
    if (memwire.number("remoteBytesRead") <= 0) {
      say("FAILED: the Memwire run read no remote shuffle bytes");
      return 1;
    }
    return 0;
  }

  static void say(String fmt, Object... args) {
    System.out.println(String.format(Locale.ROOT, fmt, args));
    System.out.flush();
  }
}
