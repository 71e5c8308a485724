package io.memwire.verbscheck;

import io.memwire.localcluster.SparkKeys;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.transfer.metrics.Metric;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
import java.util.stream.Stream;
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
 * <p>With {@code --pitfall mtu} (the {@code crossmtu} step: the driver's guest has the larger MTU)
 * Spark falls back ({@code fallback=true}): the executor in the driver's guest is refused at
 * connect (its path MTU exceeds the peer's) and hands every remote block to Spark's own fetch, its
 * log naming the cause; the other executor still reads one-sided; results equal the sort shuffle's.
 *
 * <pre>
 * CrossSparkCheck --out FILE --master spark://IP:7077 --bind IP --libdisni DIR
 *     [--name cross] [--pitfall mtu|udp4791 --spark-work DIR] [--reference FILE]
 * </pre>
 *
 * <p>Appends {@code NAME.spark.*} lines and {@code check.NAME.spark.*=PASS|FAIL} to FILE; exit 0
 * when every check passed. {@code --reference} takes the sort shuffle's digests from an earlier
 * run's FILE ({@code cross.spark.sort.JOB.digest} lines) instead of running them again.
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
    String name = o.getOrDefault("--name", "cross");
    String pitfall = o.get("--pitfall");
    if (pitfall != null && !pitfall.equals("mtu") && !pitfall.equals("udp4791")) {
      System.err.println("CrossSparkCheck: --pitfall " + pitfall + " (known: mtu, udp4791)");
      System.exit(2);
    }
    CheckLog log = new CheckLog(out);
    List<ComparedJobs.Job> jobs =
        ComparedJobs.all(pitfall == null).stream().filter(j -> JOBS.contains(j.name())).toList();
    Map<String, String> reference = earlierReference(o.get("--reference"), jobs);
    if (reference.isEmpty()) {
      log.step(name + ".spark.sortReference", () -> sortReference(o, jobs, reference, log));
    } else {
      log.put(name + ".spark.sortReference", "from " + o.get("--reference"));
    }
    log.step(name + ".spark", () -> crossRun(o, name, pitfall, jobs, reference, log));
    log.put(name + ".spark.failures", log.failures());
    System.exit(log.failures() == 0 ? 0 : 1);
  }

  /** The sort shuffle's digests of every job from an earlier run's results, or none. */
  private static Map<String, String> earlierReference(String file, List<ComparedJobs.Job> jobs)
      throws IOException {
    Map<String, String> r = new HashMap<>();
    if (file == null || !Files.exists(Paths.get(file))) {
      return r;
    }
    for (String line : Files.readAllLines(Paths.get(file))) {
      for (ComparedJobs.Job job : jobs) {
        String key = "cross.spark.sort." + job.name() + ".digest=";
        if (line.startsWith(key)) {
          r.put(job.name(), line.substring(key.length()));
        }
      }
    }
    return r.size() == jobs.size() ? r : new HashMap<>();
  }

  private static void sortReference(
      Map<String, String> o,
      List<ComparedJobs.Job> jobs,
      Map<String, String> reference,
      CheckLog log)
      throws Exception {
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
      String name,
      String pitfall,
      List<ComparedJobs.Job> jobs,
      Map<String, String> reference,
      CheckLog log)
      throws Exception {
    long t0 = System.nanoTime();
    String bind = o.get("--bind");
    String p = name + ".spark";
    SparkSession.Builder b = base(bind);
    CheckCluster.EMULATED.forEach(b::config);
    SparkSession s =
        b.master(o.get("--master"))
            .appName("memwire-" + name + "-verbs")
            .config(SparkKeys.EXECUTOR_MEMORY, "640m")
            .config("spark.executor.cores", "1")
            .config("spark.cores.max", "2")
            // No locality wait: tasks go to both executors, so each reads the other's outputs.
            .config(SparkKeys.LOCALITY_WAIT, "0s")
            .config(SparkKeys.EXECUTOR_EXTRA_LIBRARY_PATH, o.get("--libdisni"))
            .config(SparkKeys.SHUFFLE_MANAGER, RdmaShuffleManager.class.getName())
            .config(SparkKeys.MEMWIRE_PROVIDER, "verbs")
            // Under a pitfall the refused reads must go to Spark's own fetch, not fail the job.
            .config(SparkKeys.MEMWIRE_FALLBACK, pitfall == null ? "false" : "true")
            .config(SparkKeys.MEMWIRE_CONNECT_TIMEOUT, pitfall == null ? "300s" : "60s")
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
          p + ".startSeconds", String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
      Map<String, String> where = ExecutorStats.transports(jsc, true);
      log.put(p + ".executors", where);
      Set<String> hosts =
          where.values().stream()
              .map(v -> v.split(" ", 2)[0])
              .collect(Collectors.toCollection(TreeSet::new));
      boolean verbs =
          where.values().stream().allMatch(v -> v.split(" ", 2)[1].startsWith("verbs:"));
      log.verdict(
          p + ".twoGuests",
          hosts.size() == 2 && verbs,
          "executors on " + hosts + ", all on verbs " + verbs);
      Map<String, Map<String, Long>> before = ExecutorStats.byExecutor(jsc);
      for (ComparedJobs.Job job : jobs) {
        log.step(
            p + ".job." + job.name(),
            () -> {
              long t1 = System.nanoTime();
              String digest = job.run(s, jsc);
              log.put(
                  p + ".job." + job.name() + ".wallSeconds",
                  String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t1) / 1e9));
              String want = reference.get(job.name());
              log.verdict(
                  p + ".job." + job.name(),
                  digest.equals(want),
                  "got " + digest + ", sort shuffle gave " + want);
            });
      }
      Map<String, Map<String, Long>> after = ExecutorStats.byExecutor(jsc);
      log.put(p + ".executorStats", after);
      StringBuilder detail = new StringBuilder();
      boolean ok = after.size() == 2;
      for (String id : after.keySet()) {
        Map<String, Long> was = before.getOrDefault(id, Map.of());
        Map<String, Long> now = after.get(id);
        long rdma = ShuffleMetrics.delta(was, now, ShuffleMetrics.RDMA_BLOCKS);
        long fallback = ShuffleMetrics.delta(was, now, ShuffleMetrics.FALLBACK_BLOCKS);
        long refused = ShuffleMetrics.delta(was, now, CONNECT_FALLBACKS);
        long failed = ShuffleMetrics.delta(was, now, ShuffleMetrics.FAILED_BLOCKS);
        String host = where.getOrDefault(id, "?").split(" ", 2)[0];
        if (pitfall == null) {
          ok &= rdma > 0 && fallback == 0 && failed == 0;
        } else if (pitfall.equals("udp4791") || host.equals(bind)) {
          // No connect completes (RoCE's port dropped), or this is the larger MTU's side (refused
          // at connect): every remote block through Spark.
          ok &= rdma == 0 && fallback > 0 && refused == fallback && failed == 0;
        } else {
          ok &= rdma > 0 && fallback == 0 && failed == 0;
        }
        detail
            .append("executor ")
            .append(id)
            .append(" (")
            .append(host)
            .append("): one-sided blocks ")
            .append(rdma)
            .append(", fallback ")
            .append(fallback)
            .append(" (connect ")
            .append(refused)
            .append("), failed ")
            .append(failed)
            .append("; ");
      }
      log.verdict(p + ".counters", ok, detail.toString());
      if (pitfall != null) {
        String cause = pitfall.equals("mtu") ? "MTU mismatch" : "UDP 4791 unreachable";
        String said = causeInExecutorLogs(o.get("--spark-work"), jsc.sc().applicationId(), cause);
        log.verdict(
            p + ".errorNamesCause",
            said != null && (!pitfall.equals("mtu") || said.contains("ip link set")),
            said == null ? "no executor log in this guest says \"" + cause + "\"" : said);
      }
    } finally {
      s.stop();
    }
  }

  private static final Metric CONNECT_FALLBACKS =
      ShuffleMetrics.fallback(ShuffleCounters.FallbackCause.CONNECT);

  /** The first line of an executor log of application {@code appId} that contains {@code cause}. */
  private static String causeInExecutorLogs(String workDir, String appId, String cause)
      throws IOException {
    if (workDir == null) {
      return null;
    }
    Path app = Paths.get(workDir, appId);
    if (!Files.isDirectory(app)) {
      return null;
    }
    try (Stream<Path> files = Files.walk(app)) {
      for (Path f : files.filter(f -> f.getFileName().toString().equals("stderr")).toList()) {
        for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
          if (line.contains(cause)) {
            return line.trim();
          }
        }
      }
    }
    return null;
  }
}
