package io.memwire.mainjob;

import io.memwire.shuffle.metrics.ManagerCounters;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.executor.ShuffleReadMetrics;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import scala.Tuple2;

/**
 * The main job: a shuffle-heavy Spark application, submitted as-is with any shuffle manager. It
 * generates random key/value records on every map task, then shuffles them three ways: {@code
 * reduceByKey} (map-side combine), {@code groupByKey} followed by {@code sortByKey}, and a
 * DataFrame {@code groupBy/agg}. It prints and writes a digest of every result (so two runs can be
 * checked equal) and the shuffle metrics Spark recorded. Around the main job it runs a small job
 * (the same shuffles over 16,000 records) first and again after it, to separate what a first job
 * pays from what every small job pays, and reads the shuffle manager's own counters (bytes read
 * one-sided, fallbacks, registrations, directory and index reads) from every executor; with
 * Memwire's manager, remote bytes that did not go one-sided fail the application.
 *
 * <pre>
 * spark-submit --class io.memwire.mainjob.ShuffleApp memwire-main-job.jar
 *     [--records N] [--keys K] [--value-bytes B] [--maps M] [--partitions P]
 *     [--small-repeats N] [--wait-executors N] [--out results.json] [--rounds R]
 * </pre>
 *
 * <p>With {@code --rounds R} the application stays up for R rounds, so that a launcher can
 * alternate applications without paying their start again: round 1 runs as above and writes {@link
 * #roundFile}; each later round starts when a line arrives on standard input and runs the main job
 * and the later small jobs again (its first-job figures are round 1's). End of input ends it.
 */
public final class ShuffleApp {
  private ShuffleApp() {}

  /** Shuffle metrics summed over all tasks, from a listener on the driver. */
  static final class ShuffleMetrics extends SparkListener {
    final AtomicLong remoteBytes = new AtomicLong();
    final AtomicLong localBytes = new AtomicLong();
    final AtomicLong fetchWaitMs = new AtomicLong();
    final AtomicLong recordsRead = new AtomicLong();
    final AtomicLong bytesWritten = new AtomicLong();

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
      TaskMetrics m = end.taskMetrics();
      if (m == null) {
        return;
      }
      ShuffleReadMetrics r = m.shuffleReadMetrics();
      remoteBytes.addAndGet(r.remoteBytesRead());
      localBytes.addAndGet(r.localBytesRead());
      fetchWaitMs.addAndGet(r.fetchWaitTime());
      recordsRead.addAndGet(r.recordsRead());
      bytesWritten.addAndGet(m.shuffleWriteMetrics().bytesWritten());
    }

    Map<String, Long> snapshot() {
      return Map.of(
          "remoteBytes",
          remoteBytes.get(),
          "localBytes",
          localBytes.get(),
          "fetchWaitMs",
          fetchWaitMs.get(),
          "recordsRead",
          recordsRead.get(),
          "bytesWritten",
          bytesWritten.get());
    }
  }

  public static void main(String[] args) throws Exception {
    long records = 2_000_000;
    int keys = 200_000;
    int valueBytes = 100;
    int maps = 8;
    int partitions = 16;
    int waitExecutors = 0;
    int smallRepeats = 3;
    int rounds = 0; // 0: no --rounds, one round written to --out itself
    Path out = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--records" -> records = Long.parseLong(args[++i]);
        case "--keys" -> keys = Integer.parseInt(args[++i]);
        case "--value-bytes" -> valueBytes = Integer.parseInt(args[++i]);
        case "--maps" -> maps = Integer.parseInt(args[++i]);
        case "--partitions" -> partitions = Integer.parseInt(args[++i]);
        case "--small-repeats" -> smallRepeats = Integer.parseInt(args[++i]);
        case "--out" -> out = Paths.get(args[++i]);
        case "--wait-executors" -> waitExecutors = Integer.parseInt(args[++i]);
        case "--rounds" -> rounds = Integer.parseInt(args[++i]);
        default ->
            throw new IllegalArgumentException(
                "unknown argument "
                    + args[i]
                    + "; usage: ShuffleApp [--records N] [--keys K] [--value-bytes B] [--maps M]"
                    + " [--partitions P] [--small-repeats N] [--wait-executors N] [--out FILE]"
                    + " [--rounds R]");
      }
    }
    long t0 = System.nanoTime();
    SparkSession spark = SparkSession.builder().appName("memwire-main-job").getOrCreate();
    try {
      awaitExecutors(spark, waitExecutors);
      double ready = (System.nanoTime() - t0) / 1e9;
      Shape shape = new Shape(records, keys, valueBytes, maps, partitions);
      if (rounds == 0) {
        run(spark, shape, smallRepeats, ready, out);
      } else {
        runRounds(spark, shape, smallRepeats, ready, out, rounds);
      }
    } finally {
      spark.stop();
    }
  }

  /**
   * Waits (at most 3 minutes) until {@code n} executors registered, so timing excludes start-up.
   */
  static void awaitExecutors(SparkSession spark, int n) throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(3);
    while (spark.sparkContext().statusTracker().getExecutorInfos().length - 1 < n) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "only "
                + (spark.sparkContext().statusTracker().getExecutorInfos().length - 1)
                + " of "
                + n
                + " executors registered within 3 minutes");
      }
      Thread.sleep(200);
    }
  }

  /**
   * Runs the three shuffles once at the given size on an existing session (kept open), with the
   * small job before it, and prints (and writes to {@code out} when given) the result digest and
   * shuffle metrics; used by the verbs check.
   */
  public static void run(
      SparkSession spark,
      long records,
      int keys,
      int valueBytes,
      int maps,
      int partitions,
      Path out)
      throws Exception {
    run(spark, new Shape(records, keys, valueBytes, maps, partitions), 0, 0, out);
  }

  /** The size of one job. */
  record Shape(long records, int keys, int valueBytes, int maps, int partitions) {
    /** The small job: the same three shuffles over few records, paying mostly fixed costs. */
    Shape small() {
      return new Shape(16_000, 2_000, valueBytes, maps, partitions);
    }
  }

  /**
   * What one phase (one or more jobs) did: Spark's metrics, the manager's counters and the
   * executors' CPU nanoseconds ({@link ExecutorCpuProbe#since}; empty when not measurable).
   */
  record Phase(
      double seconds,
      Summary[] results,
      Map<String, Long> spark,
      Map<String, Long> manager,
      Map<String, Long> cpu) {
    long spark(String key) {
      return spark.getOrDefault(key, 0L);
    }

    long manager(String key) {
      return manager.getOrDefault(key, 0L);
    }
  }

  private static final long COUNTERS_TIMEOUT_MS = 60_000;

  /**
   * The phases of one submission: a small job first (it pays what a first job pays: JIT of the read
   * path, first connections, first directory and index reads), the main job, then the small job
   * {@code smallRepeats} more times (what every later small job pays).
   */
  static void run(SparkSession spark, Shape shape, int smallRepeats, double readySeconds, Path out)
      throws Exception {
    ShuffleMetrics metrics = new ShuffleMetrics();
    spark.sparkContext().addSparkListener(metrics);
    round(spark, metrics, shape, smallRepeats, readySeconds, out, null);
  }

  /** Round {@code r}'s result file when an application runs several: {@code <out>-<r>.json}. */
  static Path roundFile(Path out, int round) {
    String name = out.getFileName().toString();
    String stem = name.endsWith(".json") ? name.substring(0, name.length() - 5) : name;
    return out.resolveSibling(stem + "-" + round + ".json");
  }

  /** {@code rounds} rounds in this application, each after the first on a line of input. */
  static void runRounds(
      SparkSession spark, Shape shape, int smallRepeats, double readySeconds, Path out, int rounds)
      throws Exception {
    ShuffleMetrics metrics = new ShuffleMetrics();
    spark.sparkContext().addSparkListener(metrics);
    BufferedReader input =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Phase cold = null;
    for (int r = 1; r <= rounds; r++) {
      if (r > 1 && input.readLine() == null) {
        return; // the launcher is done with this application
      }
      cold = round(spark, metrics, shape, smallRepeats, readySeconds, roundFile(out, r), cold);
    }
  }

  /**
   * One round; runs the first small job unless {@code earlierCold} (a first round's) is given.
   * Writes {@code out} only once every check passed. Returns the first small job's phase.
   */
  private static Phase round(
      SparkSession spark,
      ShuffleMetrics metrics,
      Shape shape,
      int smallRepeats,
      double readySeconds,
      Path out,
      Phase earlierCold)
      throws Exception {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    SparkConf conf = jsc.getConf();
    boolean memwire = conf.get("spark.shuffle.manager", "sort").contains("RdmaShuffleManager");

    Phase cold = earlierCold != null ? earlierCold : phase(spark, metrics, shape.small(), 1);
    Phase main = phase(spark, metrics, shape, 1);
    List<Double> warm = new ArrayList<>();
    Phase warmTotal = null;
    for (int i = 0; i < smallRepeats; i++) {
      Phase p = phase(spark, metrics, shape.small(), 1);
      warm.add(p.seconds());
      warmTotal = warmTotal == null ? p : plus(warmTotal, p);
    }
    warm.sort(Double::compare);
    Summary[] r = main.results();
    Summary[] sr = cold.results();
    String digest =
        String.format(Locale.ROOT, "%016x-%016x-%016x", r[0].hash, r[1].hash, r[2].hash);
    String smallDigest =
        String.format(Locale.ROOT, "%016x-%016x-%016x", sr[0].hash, sr[1].hash, sr[2].hash);
    boolean ordered =
        java.util.Arrays.stream(r).allMatch(x -> x.ordered)
            && java.util.Arrays.stream(sr).allMatch(x -> x.ordered);
    // Proof over every phase: Spark's remote bytes, and what Memwire moved one-sided.
    List<Phase> all = new ArrayList<>();
    if (earlierCold == null) {
      all.add(cold);
    }
    all.add(main);
    if (warmTotal != null) {
      all.add(warmTotal);
    }
    long remoteAll = all.stream().mapToLong(p -> p.spark("remoteBytes")).sum();
    long oneSidedAll = all.stream().mapToLong(p -> p.manager("rdmaBytes")).sum();
    long fallbackAll = all.stream().mapToLong(p -> p.manager("fallbackBlocks")).sum();
    long failedAll = all.stream().mapToLong(p -> p.manager("failedBlocks")).sum();
    // What a small job made the manager do, per job: cold (first) and warm (later, averaged).
    int n = Math.max(1, smallRepeats);
    // The executors' CPU per GiB of remote bytes in the main job (-1: not measurable here).
    double gib = main.spark("remoteBytes") / 1073741824.0;
    ShuffleAppResult result =
        new ShuffleAppResult(
            conf.get("spark.shuffle.manager", "sort"),
            conf.get("spark.shuffle.rdma.provider", "-"),
            Boolean.parseBoolean(conf.get("spark.shuffle.readHostLocalDisk", "true")),
            shape.records(),
            main.seconds(),
            readySeconds,
            cold.seconds(),
            warm.isEmpty() ? 0 : median(warm),
            r[0].rows + r[1].rows + r[2].rows,
            digest,
            smallDigest,
            ordered,
            main.spark("bytesWritten"),
            main.spark("remoteBytes"),
            main.spark("localBytes"),
            main.spark("fetchWaitMs"),
            main.spark("recordsRead"),
            main.manager().containsKey("rdmaBytes"),
            main.manager("rdmaBytes"),
            Math.max(0, main.spark("remoteBytes") - main.manager("rdmaBytes")),
            main.manager("fallbackBlocks"),
            remoteAll,
            oneSidedAll,
            fallbackAll,
            failedAll,
            counters(cold, 1),
            warmTotal == null ? counters(null, 1) : counters(warmTotal, n),
            counters(main, 1),
            main.manager("node.openConnections"),
            cpuMsPerGiB(main, "serving", gib),
            cpuMsPerGiB(main, "transport", gib),
            cpuMsPerGiB(main, "executor", gib));
    String json = result.toJson();
    System.out.println("memwire-main-job result " + json);
    if (!ordered) {
      throw new IllegalStateException("a sorted result was out of order: " + json);
    }
    if (memwire && remoteAll > 0 && (oneSidedAll < remoteAll || fallbackAll > 0 || failedAll > 0)) {
      throw new IllegalStateException(
          String.format(
              Locale.ROOT,
              "PATH CHECK FAILED: Spark read"
                  + " %,d remote shuffle bytes, Memwire %,d of them one-sided; %d blocks went to Spark's"
                  + " own transfer, %d failed",
              remoteAll,
              oneSidedAll,
              fallbackAll,
              failedAll));
    }
    if (out != null) {
      result.writeTo(out);
    }
    return cold;
  }

  static double median(List<Double> sorted) {
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /** A phase's manager counters per job ({@code jobs} of them); all zero for no phase. */
  private static ShuffleAppResult.JobCounters counters(Phase p, int jobs) {
    if (p == null) {
      return new ShuffleAppResult.JobCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }
    return new ShuffleAppResult.JobCounters(
        p.manager("outputsPublished") / jobs,
        p.manager("slotReads") / jobs,
        p.manager("indexReads") / jobs,
        p.manager("indexEntryReads") / jobs,
        p.manager("indexCacheHits") / jobs,
        p.manager("fetchRequests") / jobs,
        p.manager("firstBlockMicros") / jobs,
        p.manager("rdmaBlocks") / jobs,
        p.spark("remoteBytes") / jobs,
        p.spark("fetchWaitMs") / jobs);
  }

  /** A phase's executor CPU of one thread group per GiB, or -1 when not measured. */
  private static double cpuMsPerGiB(Phase p, String group, double gib) {
    Long nanos = p.cpu().get(group);
    return nanos == null || gib == 0 ? -1.0 : nanos / 1e6 / gib;
  }

  private static Phase plus(Phase a, Phase b) {
    Map<String, Long> sparkSum = new java.util.HashMap<>(a.spark());
    b.spark().forEach((k, v) -> sparkSum.merge(k, v, Long::sum));
    Map<String, Long> managerSum = new java.util.HashMap<>(a.manager());
    b.manager().forEach((k, v) -> managerSum.merge(k, v, Long::sum));
    Map<String, Long> cpuSum = new java.util.HashMap<>(a.cpu());
    b.cpu().forEach((k, v) -> cpuSum.merge(k, v, Long::sum));
    return new Phase(a.seconds() + b.seconds(), a.results(), sparkSum, managerSum, cpuSum);
  }

  /** Runs the job {@code times} times; Spark's metrics and the manager's counters around it. */
  static Phase phase(SparkSession spark, ShuffleMetrics metrics, Shape shape, int times)
      throws Exception {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Map<String, Long> before = managerCounters(jsc);
    spark.sparkContext().listenerBus().waitUntilEmpty(COUNTERS_TIMEOUT_MS);
    Map<String, Long> sparkBefore = metrics.snapshot();
    Object cpuBefore = ExecutorCpuProbe.take();
    long start = System.nanoTime();
    Summary[] results = null;
    for (int i = 0; i < times; i++) {
      results = job(spark, shape);
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    Map<String, Long> cpu = ExecutorCpuProbe.since(cpuBefore);
    spark.sparkContext().listenerBus().waitUntilEmpty(COUNTERS_TIMEOUT_MS);
    Map<String, Long> sparkAfter = metrics.snapshot();
    Map<String, Long> after = managerCounters(jsc);
    Map<String, Long> sparkDelta = new java.util.HashMap<>();
    sparkAfter.forEach((k, v) -> sparkDelta.put(k, v - sparkBefore.getOrDefault(k, 0L)));
    Map<String, Long> managerDelta = new java.util.HashMap<>();
    after.forEach(
        (k, v) ->
            managerDelta.put(k, k.startsWith("node.open") ? v : v - before.getOrDefault(k, 0L)));
    return new Phase(seconds, results, sparkDelta, managerDelta, cpu);
  }

  /**
   * Memwire's shuffle manager counters summed over the executors ({@link ManagerCounters}), or none
   * when Memwire's jar is not on this driver's class path (Spark's own manager is measured). Either
   * way a tiny job of a few tasks per executor runs, so both configurations' phases start alike.
   */
  private static Map<String, Long> managerCounters(JavaSparkContext jsc) {
    try {
      return ManagerCounters.sum(jsc, java.time.Duration.ofMillis(COUNTERS_TIMEOUT_MS));
    } catch (NoClassDefFoundError noMemwire) {
      int tasks = 4 * Math.max(1, jsc.sc().statusTracker().getExecutorInfos().length - 1);
      jsc.parallelize(java.util.stream.IntStream.range(0, tasks).boxed().toList(), tasks).count();
      return new java.util.HashMap<>();
    }
  }

  /** The three shuffles over {@code shape}'s records: reduceByKey, groupByKey, DataFrame agg. */
  static Summary[] job(SparkSession spark, Shape shape) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    int partitions = shape.partitions();
    // The same records in every run: map task m draws from a generator seeded 42,000,126 + m.
    JavaPairRDD<Long, byte[]> data =
        new RandomRecords(
                shape.maps(),
                shape.records() / shape.maps(),
                shape.valueBytes(),
                42L * 1_000_003,
                1,
                RandomRecords.uniformKeys(shape.keys()))
            .rdd(jsc);

    // 1. reduceByKey: map-side combine, then a global sort.
    Summary reduced =
        Summary.of(
            data.mapValues(v -> (long) v[0])
                .reduceByKey(Long::sum, partitions)
                .sortByKey(true, partitions));
    // 2. groupByKey then sortByKey: every value crosses the network.
    Summary grouped =
        Summary.of(
            data.groupByKey(partitions)
                .mapValues(
                    vs -> {
                      long h = 0;
                      long n = 0;
                      for (byte[] v : vs) {
                        h += java.util.Arrays.hashCode(v);
                        n++;
                      }
                      return n * 1_000_003L + h;
                    })
                .sortByKey(true, partitions));
    // 3. DataFrame groupBy/agg, ordered by key.
    Dataset<Row> df =
        spark
            .createDataset(
                data.map(t -> new Tuple2<>(t._1(), (int) t._2()[1])).rdd(),
                org.apache.spark.sql.Encoders.tuple(
                    org.apache.spark.sql.Encoders.LONG(), org.apache.spark.sql.Encoders.INT()))
            .toDF("key", "v");
    Summary agg =
        Summary.of(
            df.groupBy("key")
                .agg(functions.count("v"), functions.sum("v"))
                .orderBy("key")
                .javaRDD()
                .mapToPair(
                    r -> new Tuple2<>(r.getLong(0), r.getLong(1) * 1_000_003L + r.getLong(2))));
    return new Summary[] {reduced, grouped, agg};
  }

  /**
   * A result's fingerprint computed where the data is: row count, an order-independent hash of all
   * (key, value) rows, and whether the rows were in ascending key order across partitions.
   * Independent of how the range partitioner split the keys, so two runs compare exactly.
   */
  static final class Summary {
    final long rows;
    final long hash;
    final boolean ordered;

    Summary(long rows, long hash, boolean ordered) {
      this.rows = rows;
      this.hash = hash;
      this.ordered = ordered;
    }

    static Summary of(JavaPairRDD<Long, Long> sorted) {
      List<long[]> parts =
          sorted
              .mapPartitionsWithIndex(
                  (idx, it) -> {
                    long n = 0;
                    long h = 0;
                    long first = Long.MIN_VALUE;
                    long last = Long.MIN_VALUE;
                    long inOrder = 1;
                    while (it.hasNext()) {
                      Tuple2<Long, Long> t = it.next();
                      if (n == 0) {
                        first = t._1();
                      } else if (t._1() <= last) {
                        inOrder = 0;
                      }
                      last = t._1();
                      h += mix(t._1() * 0x9E3779B97F4A7C15L ^ mix(t._2()));
                      n++;
                    }
                    return List.of(new long[] {idx, n, h, first, last, inOrder}).iterator();
                  },
                  true)
              .collect();
      List<long[]> byIndex = new ArrayList<>(parts);
      byIndex.sort(java.util.Comparator.comparingLong(p -> p[0]));
      long rows = 0;
      long hash = 0;
      boolean ordered = true;
      long previousLast = Long.MIN_VALUE;
      boolean seen = false;
      for (long[] p : byIndex) {
        rows += p[1];
        hash += p[2];
        ordered &= p[5] == 1;
        if (p[1] > 0) {
          ordered &= !seen || p[3] > previousLast;
          previousLast = p[4];
          seen = true;
        }
      }
      return new Summary(rows, hash, ordered);
    }

    static long mix(long z) {
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      return z ^ (z >>> 31);
    }
  }
}
