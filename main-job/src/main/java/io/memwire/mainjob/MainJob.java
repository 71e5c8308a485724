package io.memwire.mainjob;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

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
 *         [--work-dir DIR] [--timeout-minutes 20] [--rotate 0] [--ucx-jars JAR:JAR]
 * </pre>
 *
 * Configurations: {@code spark-sort} and {@code memwire} (over {@code --provider}) or {@code
 * memwire-tcp}, {@code memwire-ucx}, {@code memwire-verbs} (ucx needs {@code --ucx-jars}: the ucx
 * provider's jar and JUCX's), each optionally with {@code -hostlocal} (Spark's default {@code
 * spark.shuffle.readHostLocalDisk=true}); without it both read blocks of the other executor on this
 * host through their transport, which is what a single-host run must do to measure a transport at
 * all. Exit status 0 when every run succeeded with identical results and Memwire read its remote
 * blocks one-sided; 1 otherwise.
 *
 * <p>The order alternates every round; {@code --rotate K} starts it K places on, so that round 1,
 * where each application is submitted and pays its first job, can start with another configuration:
 * the application submitted second has been measured to pay 0.1-1.3 s more in its first job than
 * the one submitted first (medians, depending on the machine), with the first one idle meanwhile.
 */
public final class MainJob {
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
    int rounds = 3;
    int smallRepeats = 3;
    String configNames = "spark-sort,memwire";
    Path workDir = Paths.get("target", "main-job");
    long timeoutMinutes = 20;
    int rotate = 0;
    List<Path> ucxJars = new ArrayList<>();
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
        case "--rotate" -> rotate = Integer.parseInt(args[++i]);
        case "--ucx-jars" -> {
          for (String j : args[++i].split(java.io.File.pathSeparator)) {
            if (!j.isBlank()) {
              ucxJars.add(Paths.get(j));
            }
          }
        }
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (sparkHome == null) {
      throw new IllegalArgumentException("--spark-home is required");
    }
    if (rounds < 1) {
      throw new IllegalArgumentException("--rounds must be at least 1, got " + rounds);
    }
    if (rotate < 0) {
      throw new IllegalArgumentException("--rotate must be 0 or more, got " + rotate);
    }
    for (Path p : new Path[] {sparkHome.resolve("bin/spark-submit"), appJar, memwireJar}) {
      if (p == null || !Files.exists(p)) {
        throw new IllegalArgumentException(
            "missing " + p + ": build first with `mvn -B -DskipTests install`");
      }
    }
    List<Configuration> configs = Configuration.parse(configNames, provider, memwireJar, ucxJars);
    Files.createDirectories(workDir);
    say(
        "Memwire main job: %,d records, %d executors (local-cluster), Memwire provider %s, %d"
            + " rounds of %s, order alternating",
        records, executors, provider, rounds, configs.stream().map(Configuration::name).toList());
    String master = "local-cluster[" + executors + ",1,1024]";
    Map<String, List<ShuffleAppResult>> results = new LinkedHashMap<>();
    configs.forEach(c -> results.put(c.name(), new ArrayList<>()));
    // One application per configuration, kept up across rounds: each pays its start and first job
    // once, and the rounds alternate between them.
    Map<String, Submission> apps = new LinkedHashMap<>();
    FabricLines fabric = FabricLines.open();
    try {
      for (int round = 0; round < rounds; round++) {
        List<Configuration> order = new ArrayList<>(configs);
        // Alternate which manager goes first, so drift and warm page caches favour neither.
        java.util.Collections.rotate(order, -((round + rotate) % configs.size()));
        for (Configuration c : order) {
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
                SparkSubmitCommand.command(
                    sparkHome, master, c, appJar, records, smallRepeats, executors);
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
    fabric.print(); // the fabric's health over both managers' runs, before the ratios
    int rc = ComparisonReport.report(results, workDir);
    say(
        "first small jobs: %s was submitted first; the application submitted second has"
            + " measured 0.1-1.3 s more in its first job (--rotate changes the order; see"
            + " docs/BENCHMARKS.md)",
        configs.get(rotate % configs.size()).name());
    return rc;
  }

  /** Prints a line of the launcher's own output at once (the applications' output interleaves). */
  static void say(String fmt, Object... args) {
    System.out.println(String.format(Locale.ROOT, fmt, args));
    System.out.flush();
  }
}
