package io.memwire.shuffle.bench;

import io.memwire.localcluster.ExecutorCpu;
import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.localcluster.RandomRecords;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.metrics.Metric;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.executor.ShuffleReadMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import scala.Tuple2;

/**
 * Shuffle-heavy jobs on local-cluster[2,1,2048], with Spark's SortShuffleManager (Netty) and with
 * the RDMA manager (tcp provider on loopback) in the same run: a groupByKey and a sort
 * (repartitionAndSortWithinPartitions) over random key/value pairs of 100 bytes.
 *
 * <pre>mvn -B -pl shuffle-manager exec:exec@bench -Dbench.bytes=2g</pre>
 *
 * Rounds alternate which manager runs first (each round starts a fresh cluster per manager).
 * Prints, per job and manager, the median over rounds: wall time, total shuffle fetch wait, the
 * summed run time of the reduce tasks, remote bytes read and remote bytes per second of wall time,
 * the executors' CPU per GiB of remote bytes (serving threads, all transport threads, whole JVMs;
 * see {@link Result}), then RDMA/Netty ratios. Options: {@code -Dbench.rdmaConf="k=v;k=v"} (RDMA
 * cluster only), {@code -Dbench.conf="k=v;k=v"} (both, for example executor JVM options), {@code
 * -Dbench.perTask=true} (a line per task that waited), {@code -Dbench.compare=verify} (Memwire with
 * block verification against Memwire without it, instead of Memwire against Netty; per-round ratios
 * printed).
 */
public final class ShuffleBenchmark {
  private static final int RECORD_BYTES = 100;
  private static final int VALUE_BYTES = RECORD_BYTES - 8;

  /** Sums shuffle read metrics of finished tasks. */
  static final class Metrics extends SparkListener {
    /** {@code -Dbench.perTask=true}: one line per task that waited for shuffle data. */
    private static final boolean PER_TASK = Boolean.getBoolean("bench.perTask");

    final AtomicLong fetchWaitMs = new AtomicLong();
    final AtomicLong remoteBytes = new AtomicLong();
    final AtomicLong reduceTaskMs = new AtomicLong();

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
      if (end.taskMetrics() == null) {
        return;
      }
      ShuffleReadMetrics read = end.taskMetrics().shuffleReadMetrics();
      fetchWaitMs.addAndGet(read.fetchWaitTime());
      remoteBytes.addAndGet(read.remoteBytesRead());
      if (read.totalBlocksFetched() > 0) {
        reduceTaskMs.addAndGet(end.taskMetrics().executorRunTime());
      }
      if (PER_TASK && read.fetchWaitTime() > 0) {
        System.out.printf(
            "    task %d (stage %d, executor %s): fetch wait %d ms, run %d ms,"
                + " remote %d B, local %d B%n",
            end.taskInfo().taskId(),
            end.stageId(),
            end.taskInfo().executorId(),
            read.fetchWaitTime(),
            end.taskMetrics().executorRunTime(),
            read.remoteBytesRead(),
            read.localBytesRead());
      }
    }

    void reset() {
      fetchWaitMs.set(0);
      remoteBytes.set(0);
      reduceTaskMs.set(0);
    }
  }

  /**
   * One measured run of one job. CPU figures are the executors' (from /proc): {@code servingCpu}
   * the threads that send blocks (Spark's Netty server; Memwire's tcp serving loops; verbs
   * threads), {@code transportCpu} those plus the reading side's (Spark's Netty client, Memwire's
   * tcp reading loops), {@code executorCpu} the whole executor JVMs, {@code jitCpu} and {@code
   * gcCpu} their JIT compiler and garbage collector threads.
   */
  record Result(
      double wallSeconds,
      long fetchWaitMs,
      long remoteBytes,
      double reduceTaskSeconds,
      long servingCpuNanos,
      long transportCpuNanos,
      long executorCpuNanos,
      long jitCpuNanos,
      long gcCpuNanos) {
    double remoteMiBPerSecond() {
      return remoteBytes / 1048576.0 / wallSeconds;
    }

    /** Milliseconds of CPU per GiB of remote bytes. */
    double perGiB(long nanos) {
      return remoteBytes == 0 ? Double.NaN : nanos / 1e6 / (remoteBytes / 1073741824.0);
    }

    static Result of(
        double wall,
        long fetchWaitMs,
        long remoteBytes,
        double reduceTaskSeconds,
        ExecutorCpu.Snapshot cpu) {
      return new Result(
          wall,
          fetchWaitMs,
          remoteBytes,
          reduceTaskSeconds,
          cpu.servingNanos(),
          cpu.transportNanos(),
          cpu.nanos(ExecutorCpu.Group.PROCESS),
          cpu.nanos(ExecutorCpu.Group.JIT),
          cpu.nanos(ExecutorCpu.Group.GC));
    }
  }

  public static void main(String[] args) {
    long bytes = TransferConfig.parseBytes(args.length > 0 ? args[0] : "256m");
    int reps = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    // Optional settings "key=value;key=value": for the RDMA manager's cluster only, for both.
    Map<String, String> rdmaConf = settings(args, 2);
    Map<String, String> bothConf = settings(args, 3);
    long records = bytes / RECORD_BYTES;
    int maps = (int) Math.max(4, Math.min(64, bytes / (32L << 20)));
    int reducers = maps;
    System.out.printf(
        "shuffle benchmark: %,d records of %d bytes (%,d MiB), %d maps, %d reducers,"
            + " %d rounds%n",
        records, RECORD_BYTES, bytes >> 20, maps, reducers, reps);

    // Rounds alternate which manager goes first, so drift in machine load hits both alike.
    String rdma = RdmaShuffleManager.class.getName();
    // -Dbench.compare=verify: Memwire with block verification (verified) against Memwire without
    // (unverified: spark.shuffle.rdma.verifyBlocks=false), Spark writing its checksums in both.
    boolean verify = "verify".equals(System.getProperty("bench.compare"));
    String base = verify ? "unverified" : "netty";
    String test = verify ? "verified" : "rdma";
    Map<String, Map<String, List<Result>>> all = new LinkedHashMap<>();
    all.put(base, new LinkedHashMap<>());
    all.put(test, new LinkedHashMap<>());
    for (int round = 0; round < reps; round++) {
      List<String> order = round % 2 == 0 ? List.of(base, test) : List.of(test, base);
      for (String label : order) {
        String manager = label.equals("netty") ? "sort" : rdma;
        Map<String, String> extra = new LinkedHashMap<>(bothConf);
        if (!label.equals("netty")) {
          extra.putAll(rdmaConf);
        }
        if (label.equals("unverified")) {
          extra.put("spark.shuffle.rdma.verifyBlocks", "false");
        }
        System.out.printf("round %d: %s%n", round + 1, label);
        run(manager, extra, records, maps, reducers)
            .forEach(
                (job, r) -> all.get(label).computeIfAbsent(job, j -> new ArrayList<>()).add(r));
      }
    }
    for (String job : List.of("groupByKey", "sort")) {
      List<Result> b = all.get(base).get(job);
      List<Result> t = all.get(test).get(job);
      StringBuilder wall = new StringBuilder();
      StringBuilder cpu = new StringBuilder();
      StringBuilder transport = new StringBuilder();
      for (int i = 0; i < b.size(); i++) {
        wall.append(String.format(" %.3f", t.get(i).wallSeconds() / b.get(i).wallSeconds()));
        cpu.append(
            String.format(
                " %.3f",
                t.get(i).perGiB(t.get(i).executorCpuNanos())
                    / b.get(i).perGiB(b.get(i).executorCpuNanos())));
        transport.append(
            String.format(
                " %.3f",
                t.get(i).perGiB(t.get(i).transportCpuNanos())
                    / b.get(i).perGiB(b.get(i).transportCpuNanos())));
      }
      System.out.printf(
          "%-8s per round %s/%s: wall%s; executor CPU/GiB%s; transport CPU/GiB%s%n",
          job, test, base, wall, cpu, transport);
    }
    Map<String, Map<String, Result>> results = new LinkedHashMap<>();
    all.forEach(
        (label, byJob) -> {
          Map<String, Result> medians = new LinkedHashMap<>();
          byJob.forEach(
              (job, runs) -> {
                runs.sort((a, b) -> Double.compare(a.wallSeconds(), b.wallSeconds()));
                medians.put(job, runs.get(runs.size() / 2));
              });
          results.put(label, medians);
        });

    System.out.println();
    System.out.printf(
        "%-8s %-6s %10s %14s %14s %14s %14s %12s %12s %12s%n",
        "job",
        "shuffle",
        "wall s",
        "fetch wait ms",
        "reduce tasks s",
        "remote MiB",
        "remote MiB/s",
        "serving ms/G",
        "transp ms/G",
        "exec ms/G");
    for (String job : List.of("groupByKey", "sort")) {
      for (String label : results.keySet()) {
        Result r = results.get(label).get(job);
        System.out.printf(
            "%-8s %-6s %10.2f %14d %14.2f %14.1f %14.1f %12.0f %12.0f %12.0f%n",
            job,
            label,
            r.wallSeconds(),
            r.fetchWaitMs(),
            r.reduceTaskSeconds(),
            r.remoteBytes() / 1048576.0,
            r.remoteMiBPerSecond(),
            r.perGiB(r.servingCpuNanos()),
            r.perGiB(r.transportCpuNanos()),
            r.perGiB(r.executorCpuNanos()));
      }
      Result n = results.get(base).get(job);
      Result d = results.get(test).get(job);
      System.out.printf(
          "%-8s ratio "
              + test
              + "/"
              + base
              + ": wall %.2f, fetch wait %.2f, reduce tasks %.2f,"
              + " remote MiB/s %.2f, serving CPU/GiB %.2f, transport CPU/GiB %.2f,"
              + " executor CPU/GiB %.2f%n",
          job,
          d.wallSeconds() / n.wallSeconds(),
          n.fetchWaitMs() == 0 ? Double.NaN : (double) d.fetchWaitMs() / n.fetchWaitMs(),
          d.reduceTaskSeconds() / n.reduceTaskSeconds(),
          d.remoteMiBPerSecond() / n.remoteMiBPerSecond(),
          d.perGiB(d.servingCpuNanos()) / n.perGiB(n.servingCpuNanos()),
          d.perGiB(d.transportCpuNanos()) / n.perGiB(n.transportCpuNanos()),
          d.perGiB(d.executorCpuNanos()) / n.perGiB(n.executorCpuNanos()));
    }
  }

  /** Settings "key=value;key=value" from {@code args[i]}, empty when absent. */
  static Map<String, String> settings(String[] args, int i) {
    Map<String, String> conf = new LinkedHashMap<>();
    if (args.length > i && !args[i].isBlank()) {
      for (String kv : args[i].split(";")) {
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("not key=value: " + kv);
        }
        conf.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
      }
    }
    return conf;
  }

  /**
   * The benchmark's cluster: local-cluster[2,1,2048] with {@code manager}, Kryo, host-local reads
   * off (both executors' blocks count as remote), and {@code extra} settings.
   */
  static LocalSparkCluster cluster(String manager, Map<String, String> extra) {
    LocalSparkCluster.Builder builder = LocalSparkCluster.builder();
    extra.forEach(builder::conf);
    return builder
        .executors(2)
        .coresPerExecutor(1)
        .memoryPerExecutorMb(2048)
        .appName("memwire-shuffle-benchmark")
        .startupTimeout(Duration.ofSeconds(180))
        .conf("spark.shuffle.manager", manager)
        .conf("spark.shuffle.readHostLocalDisk", "false")
        .conf("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .start();
  }

  /** One cluster with {@code manager}: a warm-up, then each job once. */
  private static Map<String, Result> run(
      String manager, Map<String, String> extra, long records, int maps, int reducers) {
    try (LocalSparkCluster cluster = cluster(manager, extra)) {
      Metrics metrics = new Metrics();
      cluster.sparkContext().addSparkListener(metrics);
      JavaSparkContext jsc = cluster.javaSparkContext();
      JavaPairRDD<Long, byte[]> input = input(jsc, records, maps);
      // Warm up JITs, connections and pools with a small run of each job.
      groupByKey(input(jsc, Math.min(records, 200_000), maps), reducers);
      sort(input(jsc, Math.min(records, 200_000), maps), reducers);

      Map<String, Result> out = new LinkedHashMap<>();
      for (String job : List.of("groupByKey", "sort")) {
        cluster.sparkContext().listenerBus().waitUntilEmpty(30_000);
        metrics.reset();
        boolean rdma = !manager.equals("sort");
        Map<String, Long> before = rdma ? readerStats(jsc) : Map.of();
        ExecutorCpu.Snapshot cpu0 = ExecutorCpu.take();
        long t0 = System.nanoTime();
        long check = job.equals("groupByKey") ? groupByKey(input, reducers) : sort(input, reducers);
        double wall = (System.nanoTime() - t0) / 1e9;
        ExecutorCpu.Snapshot cpu = ExecutorCpu.take().since(cpu0);
        cluster.sparkContext().listenerBus().waitUntilEmpty(30_000);
        out.put(
            job,
            Result.of(
                wall,
                metrics.fetchWaitMs.get(),
                metrics.remoteBytes.get(),
                metrics.reduceTaskMs.get() / 1000.0,
                cpu));
        System.out.printf(
            "  %s %s: %.2f s, fetch wait %d ms, reduce tasks %.2f s, remote %.1f MiB"
                + " (check %d)%n",
            manager.equals("sort") ? "netty" : "rdma",
            job,
            wall,
            metrics.fetchWaitMs.get(),
            metrics.reduceTaskMs.get() / 1000.0,
            metrics.remoteBytes.get() / 1048576.0,
            check);
        System.out.printf("      executor CPU: %s%n", cpu);
        if (rdma) {
          Map<String, Long> after = readerStats(jsc);
          long requests = ShuffleMetrics.delta(before, after, ShuffleMetrics.FETCH_REQUESTS);
          System.out.printf(
              "      %d one-sided fetch requests, first block after %.0f us on "
                  + "average; index reads %d, index cache hits %d, slot reads %d%n",
              requests,
              requests == 0
                  ? Double.NaN
                  : (ShuffleMetrics.delta(before, after, ShuffleMetrics.FIRST_BLOCK_MICROS))
                      / (double) requests,
              ShuffleMetrics.delta(before, after, ShuffleMetrics.INDEX_READS),
              ShuffleMetrics.delta(before, after, ShuffleMetrics.INDEX_CACHE_HITS),
              ShuffleMetrics.delta(before, after, ShuffleMetrics.SLOT_READS));
          System.out.printf(
              "      blocks verified %d, unverified %d%n",
              ShuffleMetrics.delta(before, after, ShuffleMetrics.CHECKSUM_VERIFIED_BLOCKS),
              ShuffleMetrics.delta(before, after, ShuffleMetrics.CHECKSUM_UNVERIFIED_BLOCKS));
          checkOneSided(job, metrics.remoteBytes.get(), before, after);
        }
      }
      return out;
    } catch (Exception e) {
      throw new IllegalStateException("benchmark with " + manager + " failed", e);
    }
  }

  /**
   * Prints which path moved the job's remote bytes and fails loudly when Spark counted remote bytes
   * that Memwire did not read one-sided: the figures would not measure Memwire's path.
   */
  static void checkOneSided(
      String job, long remoteBytes, Map<String, Long> before, Map<String, Long> after) {
    long oneSided = ShuffleMetrics.delta(before, after, ShuffleMetrics.RDMA_BYTES);
    long fallbackBlocks = ShuffleMetrics.delta(before, after, ShuffleMetrics.FALLBACK_BLOCKS);
    long failedBlocks = ShuffleMetrics.delta(before, after, ShuffleMetrics.FAILED_BLOCKS);
    long notOneSided = Math.max(0, remoteBytes - oneSided);
    System.out.printf(
        "      remote %.1f MiB: one-sided %.1f MiB, not one-sided %.1f MiB,"
            + " fallback blocks %d%n",
        remoteBytes / 1048576.0, oneSided / 1048576.0, notOneSided / 1048576.0, fallbackBlocks);
    if (remoteBytes > 0 && (notOneSided > 0 || fallbackBlocks > 0 || failedBlocks > 0)) {
      throw new IllegalStateException(
          "PATH CHECK FAILED in "
              + job
              + ": Spark read "
              + remoteBytes
              + " remote bytes, Memwire "
              + oneSided
              + " of them one-sided; "
              + fallbackBlocks
              + " blocks went to Spark's own transfer, "
              + failedBlocks
              + " failed");
    }
  }

  /** The reader counters of the manager, summed over both executors. */
  static Map<String, Long> readerStats(JavaSparkContext jsc) {
    Map<String, Map<String, Long>> byExecutor = new LinkedHashMap<>();
    for (int attempt = 0; attempt < 20 && byExecutor.size() < 2; attempt++) {
      List<Integer> slots = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        slots.add(i);
      }
      jsc.parallelize(slots, slots.size())
          .mapPartitions(
              it -> {
                RdmaShuffleManager m = RdmaShuffleManager.current();
                Map<String, Long> stats = m == null ? Map.of() : new LinkedHashMap<>(m.stats());
                return Collections.singletonList(
                        new Tuple2<>(org.apache.spark.SparkEnv.get().executorId(), stats))
                    .iterator();
              })
          .collect()
          .forEach(t -> byExecutor.put(t._1(), t._2()));
    }
    Map<String, Long> sum = new LinkedHashMap<>();
    for (Metric k :
        List.of(
            ShuffleMetrics.FETCH_REQUESTS,
            ShuffleMetrics.FIRST_BLOCK_MICROS,
            ShuffleMetrics.INDEX_READS,
            ShuffleMetrics.INDEX_CACHE_HITS,
            ShuffleMetrics.SLOT_READS,
            ShuffleMetrics.RDMA_BYTES,
            ShuffleMetrics.FALLBACK_BLOCKS,
            ShuffleMetrics.FAILED_BLOCKS,
            ShuffleMetrics.CHECKSUM_VERIFIED_BLOCKS,
            ShuffleMetrics.CHECKSUM_UNVERIFIED_BLOCKS)) {
      sum.put(
          k.name(), byExecutor.values().stream().mapToLong(m -> ShuffleMetrics.get(m, k)).sum());
    }
    return sum;
  }

  /**
   * Random pairs of {@code RECORD_BYTES} made on the executors by the one workload generator, the
   * same for every run (map task m seeded with m), keys uniform over a tenth of the records.
   */
  static JavaPairRDD<Long, byte[]> input(JavaSparkContext jsc, long records, int maps) {
    int keys = (int) Math.max(1, Math.min(Integer.MAX_VALUE, records / 10));
    return new RandomRecords(
            maps, records / maps, VALUE_BYTES, 0, 1, RandomRecords.uniformKeys(keys))
        .rdd(jsc);
  }

  /** groupByKey, then the number of groups (checks nothing is lost between managers). */
  static long groupByKey(JavaPairRDD<Long, byte[]> input, int reducers) {
    return groupByKeyJob(input, reducers).run();
  }

  /** A full sort of the pairs within hash partitions; returns a checksum of the first keys. */
  static long sort(JavaPairRDD<Long, byte[]> input, int reducers) {
    return sortJob(input, reducers).run();
  }

  /**
   * A job whose shuffle stays registered while the job object is reachable: Spark's cleaner removes
   * a shuffle once its RDD is garbage, so a reading taken after the action holds on to this.
   */
  record Job(Object rdd, java.util.function.LongSupplier action) {
    long run() {
      return action.getAsLong();
    }
  }

  static Job groupByKeyJob(JavaPairRDD<Long, byte[]> input, int reducers) {
    JavaPairRDD<Long, Iterable<byte[]>> grouped = input.groupByKey(reducers);
    return new Job(grouped, grouped::count);
  }

  static Job sortJob(JavaPairRDD<Long, byte[]> input, int reducers) {
    org.apache.spark.api.java.JavaRDD<Long> sums =
        input
            .repartitionAndSortWithinPartitions(new HashPartitioner(reducers))
            .mapPartitions(
                it -> {
                  long sum = 0;
                  long n = 0;
                  while (it.hasNext()) {
                    sum += it.next()._1() * (++n % 7);
                  }
                  return Collections.singletonList(sum).iterator();
                });
    return new Job(sums, () -> sums.reduce(Long::sum));
  }
}
