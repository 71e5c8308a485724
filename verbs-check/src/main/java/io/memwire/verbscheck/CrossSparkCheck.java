package io.memwire.verbscheck;

import io.memwire.localcluster.SparkKeys;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleMetrics;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * Spark across the two Soft-RoCE guests of {@code run-in-vm.sh --pair}: a standalone master and one
 * worker per guest (started by {@code pair-guest.sh}), one executor in each; the driver (this JVM,
 * in the master's guest) first runs the jobs with Spark's sort shuffle in {@code local[2]} (the
 * reference), then on the two-guest cluster with Memwire over verbs ({@code fallback=false}, no
 * bind address: each executor binds its own host), so each executor reads the other's map outputs
 * one-sided over the wire.
 *
 * <pre>CrossSparkCheck --out FILE --master spark://IP:7077 --bind IP --libdisni DIR</pre>
 *
 * <p>Appends {@code cross.spark.*} lines and {@code check.cross.spark.*=PASS|FAIL} to FILE; exit 0
 * when every check passed.
 */
public final class CrossSparkCheck {
  private static final Set<String> JOBS = Set.of("shuffleApp", "groupByKey100KiB");

  private CrossSparkCheck() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i], args[i + 1]);
    }
    if (!o.containsKey("--out")
        || !o.containsKey("--master")
        || !o.containsKey("--bind")
        || !o.containsKey("--libdisni")) {
      System.err.println(
          "usage: CrossSparkCheck --out FILE --master spark://IP:PORT --bind IP --libdisni DIR");
      System.exit(2);
    }
    Path out = Paths.get(o.get("--out"));
    if (!Files.exists(out)) {
      Files.writeString(out, "");
    }
    CheckLog log = new CheckLog(out);
    List<ComparedJobs.Job> jobs =
        ComparedJobs.all().stream().filter(j -> JOBS.contains(j.name())).toList();
    Map<String, String> reference = new HashMap<>();
    log.step(
        "cross.spark.sortReference",
        () -> {
          SparkSession s =
              base(o.get("--bind"))
                  .master("local[2]")
                  .appName("memwire-cross-sort")
                  .config(SparkKeys.SHUFFLE_MANAGER, "sort")
                  .getOrCreate();
          try {
            JavaSparkContext jsc = JavaSparkContext.fromSparkContext(s.sparkContext());
            for (ComparedJobs.Job job : jobs) {
              String d = job.run(s, jsc);
              reference.put(job.name(), d);
              log.put("cross.spark.sort." + job.name() + ".digest", d);
            }
          } finally {
            s.stop();
          }
        });
    log.step("cross.spark", () -> crossRun(o, jobs, reference, log));
    log.put("cross.spark.failures", log.failures());
    System.exit(log.failures() == 0 ? 0 : 1);
  }

  private static SparkSession.Builder base(String bind) {
    return SparkSession.builder()
        .config(SparkKeys.DRIVER_HOST, bind)
        .config(SparkKeys.DRIVER_BIND_ADDRESS, bind)
        .config(SparkKeys.UI_ENABLED, "false")
        .config(SparkKeys.SQL_SHUFFLE_PARTITIONS, "8")
        .config(SparkKeys.READ_HOST_LOCAL_DISK, "false");
  }

  private static void crossRun(
      Map<String, String> o,
      List<ComparedJobs.Job> jobs,
      Map<String, String> reference,
      CheckLog log)
      throws Exception {
    long t0 = System.nanoTime();
    SparkSession.Builder b = base(o.get("--bind"));
    CheckCluster.EMULATED.forEach(b::config);
    SparkSession s =
        b.master(o.get("--master"))
            .appName("memwire-cross-verbs")
            .config(SparkKeys.EXECUTOR_MEMORY, "640m")
            .config("spark.executor.cores", "1")
            .config("spark.cores.max", "2")
            // No locality wait: tasks go to both executors, so each reads the other's outputs.
            .config(SparkKeys.LOCALITY_WAIT, "0s")
            .config(SparkKeys.EXECUTOR_EXTRA_LIBRARY_PATH, o.get("--libdisni"))
            .config(SparkKeys.SHUFFLE_MANAGER, RdmaShuffleManager.class.getName())
            .config(SparkKeys.MEMWIRE_PROVIDER, "verbs")
            .config(SparkKeys.MEMWIRE_FALLBACK, "false")
            .config(SparkKeys.MEMWIRE_CONNECT_TIMEOUT, "300s")
            .config(SparkKeys.MEMWIRE_READ_TIMEOUT, "600s")
            .getOrCreate();
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(s.sparkContext());
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(25);
      while (jsc.sc().statusTracker().getExecutorInfos().length - 1 < 2
          && System.nanoTime() < deadline) {
        Thread.sleep(500);
      }
      log.put(
          "cross.spark.startSeconds",
          String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
      Map<String, String> where = ExecutorStats.transports(jsc, true);
      log.put("cross.spark.executors", where);
      Set<String> hosts =
          where.values().stream()
              .map(v -> v.split(" ", 2)[0])
              .collect(Collectors.toCollection(TreeSet::new));
      boolean verbs =
          where.values().stream().allMatch(v -> v.split(" ", 2)[1].startsWith("verbs:"));
      log.verdict(
          "cross.spark.twoGuests",
          hosts.size() == 2 && verbs,
          "executors on " + hosts + ", all on verbs " + verbs);
      Map<String, Map<String, Long>> before = ExecutorStats.byExecutor(jsc);
      for (ComparedJobs.Job job : jobs) {
        log.step(
            "cross.spark.job." + job.name(),
            () -> {
              long t1 = System.nanoTime();
              String digest = job.run(s, jsc);
              log.put(
                  "cross.spark.job." + job.name() + ".wallSeconds",
                  String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t1) / 1e9));
              String want = reference.get(job.name());
              log.verdict(
                  "cross.spark.job." + job.name(),
                  digest.equals(want),
                  "got " + digest + ", sort shuffle gave " + want);
            });
      }
      Map<String, Map<String, Long>> after = ExecutorStats.byExecutor(jsc);
      log.put("cross.spark.executorStats", after);
      StringBuilder detail = new StringBuilder();
      boolean ok = after.size() == 2;
      for (String id : after.keySet()) {
        long rdma =
            ShuffleMetrics.get(after.get(id), ShuffleMetrics.RDMA_BLOCKS)
                - (before.containsKey(id)
                    ? ShuffleMetrics.get(before.get(id), ShuffleMetrics.RDMA_BLOCKS)
                    : 0);
        long fallback =
            ShuffleMetrics.get(after.get(id), ShuffleMetrics.FALLBACK_BLOCKS)
                - (before.containsKey(id)
                    ? ShuffleMetrics.get(before.get(id), ShuffleMetrics.FALLBACK_BLOCKS)
                    : 0);
        long failed =
            ShuffleMetrics.get(after.get(id), ShuffleMetrics.FAILED_BLOCKS)
                - (before.containsKey(id)
                    ? ShuffleMetrics.get(before.get(id), ShuffleMetrics.FAILED_BLOCKS)
                    : 0);
        ok &= rdma > 0 && fallback == 0 && failed == 0;
        detail
            .append("executor ")
            .append(id)
            .append(" (")
            .append(where.getOrDefault(id, "?").split(" ", 2)[0])
            .append("): one-sided blocks ")
            .append(rdma)
            .append(", fallback ")
            .append(fallback)
            .append(", failed ")
            .append(failed)
            .append("; ");
      }
      log.verdict("cross.spark.counters", ok, detail.toString());
    } finally {
      s.stop();
    }
  }
}
