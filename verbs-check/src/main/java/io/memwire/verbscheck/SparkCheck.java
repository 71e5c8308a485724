package io.memwire.verbscheck;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.metrics.EveryExecutor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Spark over the verbs provider, in one driver JVM: the same jobs on a 2-executor {@code
 * local-cluster} with Spark's sort shuffle (the reference), with Memwire over verbs and with
 * Memwire over tcp; results compared exactly; the managers' counters read from every executor; 50
 * shuffles with {@code unregisterShuffle} checked for leaked memory regions and queue pairs; the
 * serving executor's CPU time while the other reads from it; an executor killed while the other
 * reads from it.
 *
 * <pre>
 * SparkCheck --out FILE --bind IP --libdisni DIR [--modes sort,verbs,ucx,tcp] [--startup-minutes N]
 *            [--leak-rounds N] [--no-faults] [--reference FILE] [--cluster-dir DIR]
 * </pre>
 *
 * <p>{@code --reference} takes the sort-shuffle digests from an earlier run's result file, so a
 * later run (e.g. {@code --modes tcp}) is compared without running the sort shuffle again. {@code
 * --cluster-dir} keeps each mode's cluster (SPARK_HOME, the executors' work dirs with their stderr
 * and any JVM crash log) under DIR/MODE instead of a temporary directory removed at close.
 *
 * <p>Writes {@code key=value} lines to FILE as it goes (a crash leaves what was measured); keys
 * {@code check.NAME=PASS|FAIL} are the verdicts, the others figures. Exit status 0 when every check
 * passed.
 */
public final class SparkCheck {
  private final CheckLog log;
  private final String bind;
  private final String libdisni;
  private final Duration startup;
  private final int leakRounds;
  private final boolean faults;
  private final Map<String, String> reference = new HashMap<>();
  private final Path clusterDir;

  private SparkCheck(
      Path out,
      String bind,
      String libdisni,
      Duration startup,
      int leakRounds,
      boolean faults,
      Path clusterDir) {
    this.log = new CheckLog(out);
    this.clusterDir = clusterDir;
    this.bind = bind;
    this.libdisni = libdisni;
    this.startup = startup;
    this.leakRounds = leakRounds;
    this.faults = faults;
  }

  public static void main(String[] args) throws Exception {
    Path out = null;
    String bind = null;
    String lib = null;
    List<String> modes = List.of("sort", "verbs", "tcp");
    int startupMinutes = 20;
    int leakRounds = 50;
    boolean faults = true;
    Path reference = null;
    Path clusterDir = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out" -> out = Paths.get(args[++i]);
        case "--bind" -> bind = args[++i];
        case "--libdisni" -> lib = args[++i];
        case "--modes" -> modes = Arrays.asList(args[++i].split(","));
        case "--startup-minutes" -> startupMinutes = Integer.parseInt(args[++i]);
        case "--leak-rounds" -> leakRounds = Integer.parseInt(args[++i]);
        case "--no-faults" -> faults = false;
        case "--reference" -> reference = Paths.get(args[++i]);
        case "--cluster-dir" -> clusterDir = Paths.get(args[++i]).toAbsolutePath();
        default ->
            throw new IllegalArgumentException(
                "unknown argument "
                    + args[i]
                    + "; usage: "
                    + "SparkCheck --out FILE --bind IP --libdisni DIR [--modes sort,verbs,ucx,tcp] "
                    + "[--startup-minutes N] [--leak-rounds N] [--no-faults] [--reference FILE] "
                    + "[--cluster-dir DIR]");
      }
    }
    if (out == null || bind == null || lib == null) {
      throw new IllegalArgumentException("--out, --bind and --libdisni are required");
    }
    for (String m : modes) {
      if (!List.of("sort", "verbs", "ucx", "tcp").contains(m)) {
        throw new IllegalArgumentException(
            "--modes: unknown mode " + m + " (sort, verbs, ucx, tcp)");
      }
    }
    SparkCheck check =
        new SparkCheck(
            out, bind, lib, Duration.ofMinutes(startupMinutes), leakRounds, faults, clusterDir);
    if (reference != null) {
      // Digests of an earlier sort-shuffle run of the same jobs ("sort.job.NAME.digest=...").
      for (String line : Files.readAllLines(reference)) {
        if (line.startsWith("sort.job.") && line.contains(".digest=")) {
          check.reference.put(
              line.substring(9, line.indexOf(".digest=")), line.substring(line.indexOf('=') + 1));
        }
      }
    }
    Files.writeString(out, "");
    for (String mode : modes) {
      check.runMode(mode);
    }
    check.log.put("sparkCheck." + String.join("+", modes) + ".failures", check.log.failures());
    System.out.println("spark-check failures=" + check.log.failures());
    System.exit(check.log.failures() == 0 ? 0 : 1);
  }

  private void runMode(String mode) {
    LocalSparkCluster[] holder = new LocalSparkCluster[1];
    log.step(
        mode + ".start",
        () -> {
          holder[0] =
              CheckCluster.start(
                  mode,
                  bind,
                  libdisni,
                  startup,
                  clusterDir == null ? null : clusterDir.resolve(mode),
                  log);
          log.verdict(mode + ".start", true, null);
        });
    LocalSparkCluster cluster = holder[0];
    if (cluster == null) {
      if (!mode.equals("sort")) {
        log.verdict("spark." + mode, false, "cluster did not start");
      }
      return;
    }
    JavaSparkContext jsc = cluster.javaSparkContext();
    Map<String, Long> pids = new TreeMap<>();
    try {
      log.step(
          mode + ".pids",
          () ->
              pids.putAll(
                  EveryExecutor.run(
                          jsc,
                          2,
                          ExecutorStats.EXECUTOR_WAIT,
                          id -> String.valueOf(ProcessHandle.current().pid()))
                      .entrySet()
                      .stream()
                      .collect(
                          Collectors.toMap(Map.Entry::getKey, e -> Long.parseLong(e.getValue())))));
      log.put(mode + ".executorPids", pids);
      if (!mode.equals("sort")) {
        log.step(
            mode + ".transport",
            () -> {
              Map<String, String> d = ExecutorStats.transports(jsc, false);
              log.put(mode + ".transportDescription", d);
              boolean ok = d.values().stream().allMatch(s -> s.startsWith(mode + ":"));
              log.verdict(mode + ".transport", ok, ok ? null : "executors run " + d);
            });
      }
      Map<String, Map<String, Long>> before =
          mode.equals("sort") ? Map.of() : ExecutorStats.byExecutor(jsc);
      for (ComparedJobs.Job job : ComparedJobs.all()) {
        log.step(
            mode + ".job." + job.name(),
            () -> {
              long t0 = System.nanoTime();
              String digest = job.run(cluster.session(), jsc);
              log.put(
                  mode + ".job." + job.name() + ".wallSeconds",
                  String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
              log.put(mode + ".job." + job.name() + ".digest", digest);
              if (mode.equals("sort")) {
                reference.put(job.name(), digest);
              } else {
                String want = reference.get(job.name());
                log.verdict(
                    mode + ".job." + job.name(),
                    digest.equals(want),
                    want == null
                        ? "no sort-shuffle reference"
                        : "got " + digest + ", sort gave " + want);
              }
            });
      }
      if (!mode.equals("sort")) {
        log.step(
            mode + ".counters",
            () -> {
              Map<String, Map<String, Long>> after = ExecutorStats.byExecutor(jsc);
              long rdma = ExecutorStats.delta(before, after, ShuffleMetrics.RDMA_BLOCKS);
              long fallback = ExecutorStats.delta(before, after, ShuffleMetrics.FALLBACK_BLOCKS);
              long failed = ExecutorStats.delta(before, after, ShuffleMetrics.FAILED_BLOCKS);
              long bytes = ExecutorStats.delta(before, after, ShuffleMetrics.RDMA_BYTES);
              log.put(mode + "." + ShuffleMetrics.RDMA_BLOCKS.name(), rdma);
              log.put(mode + "." + ShuffleMetrics.RDMA_BYTES.name(), bytes);
              log.put(mode + "." + ShuffleMetrics.FALLBACK_BLOCKS.name(), fallback);
              log.put(mode + "." + ShuffleMetrics.FAILED_BLOCKS.name(), failed);
              log.put(mode + ".executorStats", after);
              log.verdict(
                  mode + ".counters",
                  rdma > 0 && fallback == 0 && failed == 0,
                  "one-sided blocks "
                      + rdma
                      + ", fallback blocks "
                      + fallback
                      + ", failed "
                      + failed);
            });
        log.step(mode + ".servingCpu", () -> ServingCpuCheck.run(mode, jsc, pids, log));
      }
      if (mode.equals("verbs")) {
        log.step("verbs.leakLoop", () -> LeakChecks.leakLoop(jsc, pids, leakRounds, log));
        if (faults) {
          log.step("verbs.executorKilled", () -> ExecutorKilledCheck.run(jsc, pids, log));
        }
      }
    } finally {
      long t0 = System.nanoTime();
      cluster.close();
      log.put(
          mode + ".closeSeconds",
          String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    }
    if (mode.equals("verbs") || mode.equals("ucx")) {
      log.step(mode + ".resourcesAfterExit", () -> LeakChecks.resourcesAfterExit(mode, pids, log));
    }
  }
}
