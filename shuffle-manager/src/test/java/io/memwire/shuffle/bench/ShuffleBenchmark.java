package io.memwire.shuffle.bench;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.transfer.TransferConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
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
 * Prints, per job and manager, the median over rounds: wall time, total shuffle
 * fetch wait, remote bytes read and remote bytes per second of wall time, then RDMA/Netty ratios.
 */
public final class ShuffleBenchmark {
  private static final int RECORD_BYTES = 100;
  private static final int VALUE_BYTES = RECORD_BYTES - 8;

  /** Sums shuffle read metrics of finished tasks. */
  static final class Metrics extends SparkListener {
    final AtomicLong fetchWaitMs = new AtomicLong();
    final AtomicLong remoteBytes = new AtomicLong();

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
      if (end.taskMetrics() != null) {
        fetchWaitMs.addAndGet(end.taskMetrics().shuffleReadMetrics().fetchWaitTime());
        remoteBytes.addAndGet(end.taskMetrics().shuffleReadMetrics().remoteBytesRead());
      }
    }
  }

  /** One measured run of one job. */
  record Result(double wallSeconds, long fetchWaitMs, long remoteBytes) {
    double remoteMiBPerSecond() {
      return remoteBytes / 1048576.0 / wallSeconds;
    }
  }

  public static void main(String[] args) {
    long bytes = TransferConfig.parseBytes(args.length > 0 ? args[0] : "256m");
    int reps = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    // Optional settings for the RDMA manager's cluster only: "key=value;key=value".
    Map<String, String> rdmaConf = new LinkedHashMap<>();
    if (args.length > 2 && !args[2].isBlank()) {
      for (String kv : args[2].split(";")) {
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("not key=value: " + kv);
        }
        rdmaConf.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
      }
    }
    long records = bytes / RECORD_BYTES;
    int maps = (int) Math.max(4, Math.min(64, bytes / (32L << 20)));
    int reducers = maps;
    System.out.printf("shuffle benchmark: %,d records of %d bytes (%,d MiB), %d maps, %d reducers,"
        + " %d rounds%n", records, RECORD_BYTES, bytes >> 20, maps, reducers, reps);

    // Rounds alternate which manager goes first, so drift in machine load hits both alike.
    String rdma = RdmaShuffleManager.class.getName();
    Map<String, Map<String, List<Result>>> all = new LinkedHashMap<>();
    all.put("netty", new LinkedHashMap<>());
    all.put("rdma", new LinkedHashMap<>());
    for (int round = 0; round < reps; round++) {
      List<String> order = round % 2 == 0 ? List.of("sort", rdma) : List.of(rdma, "sort");
      for (String manager : order) {
        String label = manager.equals("sort") ? "netty" : "rdma";
        Map<String, String> extra = label.equals("rdma") ? rdmaConf : Map.of();
        run(manager, extra, records, maps, reducers).forEach((job, r) ->
            all.get(label).computeIfAbsent(job, j -> new ArrayList<>()).add(r));
      }
    }
    Map<String, Map<String, Result>> results = new LinkedHashMap<>();
    all.forEach((label, byJob) -> {
      Map<String, Result> medians = new LinkedHashMap<>();
      byJob.forEach((job, runs) -> {
        runs.sort((a, b) -> Double.compare(a.wallSeconds(), b.wallSeconds()));
        medians.put(job, runs.get(runs.size() / 2));
      });
      results.put(label, medians);
    });

    System.out.println();
    System.out.printf("%-8s %-6s %10s %14s %14s %14s%n", "job", "shuffle", "wall s",
        "fetch wait ms", "remote MiB", "remote MiB/s");
    for (String job : List.of("groupByKey", "sort")) {
      for (String label : results.keySet()) {
        Result r = results.get(label).get(job);
        System.out.printf("%-8s %-6s %10.2f %14d %14.1f %14.1f%n", job, label, r.wallSeconds(),
            r.fetchWaitMs(), r.remoteBytes() / 1048576.0, r.remoteMiBPerSecond());
      }
      Result n = results.get("netty").get(job);
      Result d = results.get("rdma").get(job);
      System.out.printf("%-8s ratio rdma/netty: wall %.2f, fetch wait %.2f, remote MiB/s %.2f%n",
          job, d.wallSeconds() / n.wallSeconds(),
          n.fetchWaitMs() == 0 ? Double.NaN : (double) d.fetchWaitMs() / n.fetchWaitMs(),
          d.remoteMiBPerSecond() / n.remoteMiBPerSecond());
    }
  }

  /** One cluster with {@code manager}: a warm-up, then each job once. */
  private static Map<String, Result> run(String manager, Map<String, String> extra, long records,
      int maps, int reducers) {
    LocalSparkCluster.Builder builder = LocalSparkCluster.builder();
    extra.forEach(builder::conf);
    try (LocalSparkCluster cluster = builder
        .executors(2)
        .coresPerExecutor(1)
        .memoryPerExecutorMb(2048)
        .appName("memwire-shuffle-benchmark")
        .startupTimeout(Duration.ofSeconds(180))
        .conf("spark.shuffle.manager", manager)
        .conf("spark.shuffle.readHostLocalDisk", "false")
        .conf("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .start()) {
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
        metrics.fetchWaitMs.set(0);
        metrics.remoteBytes.set(0);
        boolean rdma = !manager.equals("sort");
        Map<String, Long> before = rdma ? readerStats(jsc) : Map.of();
        long t0 = System.nanoTime();
        long check = job.equals("groupByKey") ? groupByKey(input, reducers) : sort(input, reducers);
        double wall = (System.nanoTime() - t0) / 1e9;
        cluster.sparkContext().listenerBus().waitUntilEmpty(30_000);
        out.put(job, new Result(wall, metrics.fetchWaitMs.get(), metrics.remoteBytes.get()));
        System.out.printf("  %s %s: %.2f s, fetch wait %d ms, remote %.1f MiB (check %d)%n",
            manager.equals("sort") ? "netty" : "rdma", job, wall, metrics.fetchWaitMs.get(),
            metrics.remoteBytes.get() / 1048576.0, check);
        if (rdma) {
          Map<String, Long> after = readerStats(jsc);
          long requests = after.get("fetchRequests") - before.get("fetchRequests");
          System.out.printf("      %d one-sided fetch requests, first block after %.0f us on "
              + "average; index reads %d, index cache hits %d, slot reads %d%n", requests,
              requests == 0 ? Double.NaN : (after.get("firstBlockMicros")
                  - before.get("firstBlockMicros")) / (double) requests,
              after.get("indexReads") - before.get("indexReads"),
              after.get("indexCacheHits") - before.get("indexCacheHits"),
              after.get("slotReads") - before.get("slotReads"));
        }
      }
      return out;
    } catch (Exception e) {
      throw new IllegalStateException("benchmark with " + manager + " failed", e);
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
      jsc.parallelize(slots, slots.size()).mapPartitions(it -> {
        RdmaShuffleManager m = RdmaShuffleManager.current();
        Map<String, Long> stats = m == null ? Map.of() : new LinkedHashMap<>(m.stats());
        return Collections.singletonList(
            new Tuple2<>(org.apache.spark.SparkEnv.get().executorId(), stats)).iterator();
      }).collect().forEach(t -> byExecutor.put(t._1(), t._2()));
    }
    Map<String, Long> sum = new LinkedHashMap<>();
    for (String k : List.of("fetchRequests", "firstBlockMicros", "indexReads", "indexCacheHits",
        "slotReads")) {
      sum.put(k, byExecutor.values().stream().mapToLong(m -> m.getOrDefault(k, 0L)).sum());
    }
    return sum;
  }

  /** Random pairs generated on the executors, the same for every run (seeded by partition). */
  static JavaPairRDD<Long, byte[]> input(JavaSparkContext jsc, long records, int maps) {
    long perMap = records / maps;
    List<Integer> parts = new ArrayList<>();
    for (int i = 0; i < maps; i++) {
      parts.add(i);
    }
    long keys = Math.max(1, records / 10);
    return jsc.parallelize(parts, maps).flatMapToPair(p -> {
      Random r = new Random(p);
      return new java.util.Iterator<Tuple2<Long, byte[]>>() {
        long left = perMap;

        @Override
        public boolean hasNext() {
          return left > 0;
        }

        @Override
        public Tuple2<Long, byte[]> next() {
          left--;
          byte[] v = new byte[VALUE_BYTES];
          r.nextBytes(v);
          return new Tuple2<>(Math.floorMod(r.nextLong(), keys), v);
        }
      };
    });
  }

  /** groupByKey, then the number of groups (checks nothing is lost between managers). */
  static long groupByKey(JavaPairRDD<Long, byte[]> input, int reducers) {
    return input.groupByKey(reducers).count();
  }

  /** A full sort of the pairs within hash partitions; returns a checksum of the first keys. */
  static long sort(JavaPairRDD<Long, byte[]> input, int reducers) {
    return input.repartitionAndSortWithinPartitions(new HashPartitioner(reducers))
        .mapPartitions(it -> {
          long sum = 0;
          long n = 0;
          while (it.hasNext()) {
            sum += it.next()._1() * (++n % 7);
          }
          return Collections.singletonList(sum).iterator();
        })
        .reduce(Long::sum);
  }
}
