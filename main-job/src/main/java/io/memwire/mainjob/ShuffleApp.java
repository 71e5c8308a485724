package io.memwire.mainjob;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
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
 * The main job: a shuffle-heavy Spark application, submitted as-is with any shuffle manager.
 * It generates random key/value records on every map task, then shuffles them three ways:
 * {@code reduceByKey} (map-side combine), {@code groupByKey} followed by {@code sortByKey}, and a
 * DataFrame {@code groupBy/agg}. It prints and writes a digest of every result (so two runs can
 * be checked equal) and the shuffle metrics Spark recorded.
 *
 * <pre>
 * spark-submit --class io.memwire.mainjob.ShuffleApp memwire-main-job.jar
 *     [--records N] [--keys K] [--value-bytes B] [--maps M] [--partitions P]
 *     [--wait-executors N] [--out results.json]
 * </pre>
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
  }

  public static void main(String[] args) throws Exception {
    long records = 2_000_000;
    int keys = 200_000;
    int valueBytes = 100;
    int maps = 8;
    int partitions = 16;
    int waitExecutors = 0;
    Path out = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--records" -> records = Long.parseLong(args[++i]);
        case "--keys" -> keys = Integer.parseInt(args[++i]);
        case "--value-bytes" -> valueBytes = Integer.parseInt(args[++i]);
        case "--maps" -> maps = Integer.parseInt(args[++i]);
        case "--partitions" -> partitions = Integer.parseInt(args[++i]);
        case "--out" -> out = Paths.get(args[++i]);
        case "--wait-executors" -> waitExecutors = Integer.parseInt(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]
            + "; usage: ShuffleApp [--records N] [--keys K] [--value-bytes B] [--maps M]"
            + " [--partitions P] [--wait-executors N] [--out FILE]");
      }
    }
    SparkSession spark = SparkSession.builder().appName("memwire-main-job").getOrCreate();
    try {
      awaitExecutors(spark, waitExecutors);
      run(spark, records, keys, valueBytes, maps, partitions, out);
    } finally {
      spark.stop();
    }
  }

  /** Waits (at most 3 minutes) until {@code n} executors registered, so timing excludes start-up. */
  static void awaitExecutors(SparkSession spark, int n) throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(3);
    while (spark.sparkContext().statusTracker().getExecutorInfos().length - 1 < n) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("only "
            + (spark.sparkContext().statusTracker().getExecutorInfos().length - 1) + " of " + n
            + " executors registered within 3 minutes");
      }
      Thread.sleep(200);
    }
  }

  /**
   * Runs the three shuffles on an existing session (kept open) and prints, and writes to {@code
   * out} when given, the result digest and shuffle metrics; also used by the verbs check.
   */
  public static void run(SparkSession spark, long records, int keys, int valueBytes, int maps,
      int partitions, Path out) throws Exception {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    SparkConf conf = jsc.getConf();
    ShuffleMetrics metrics = new ShuffleMetrics();
    jsc.sc().addSparkListener(metrics);
    long perMap = records / maps;
    int k = keys;
    int vb = valueBytes;
    List<Integer> mapIds = new ArrayList<>();
    for (int i = 0; i < maps; i++) {
      mapIds.add(i);
    }
    long start = System.nanoTime();
    JavaPairRDD<Long, byte[]> data = jsc.parallelize(mapIds, maps).flatMapToPair(id -> {
      SplittableRandom r = new SplittableRandom(42L * 1_000_003 + id);
      return new Iterator<Tuple2<Long, byte[]>>() {
        long left = perMap;

        @Override
        public boolean hasNext() {
          return left > 0;
        }

        @Override
        public Tuple2<Long, byte[]> next() {
          left--;
          byte[] v = new byte[vb];
          for (int j = 0; j < vb; j += 8) {
            long x = r.nextLong();
            for (int b = 0; b < 8 && j + b < vb; b++) {
              v[j + b] = (byte) (x >>> (8 * b));
            }
          }
          return new Tuple2<>((long) r.nextInt(k), v);
        }
      };
    });

    // 1. reduceByKey: map-side combine, then a global sort.
    Summary reduced = Summary.of(data
        .mapValues(v -> (long) v[0])
        .reduceByKey(Long::sum, partitions)
        .sortByKey(true, partitions));
    // 2. groupByKey then sortByKey: every value crosses the network.
    Summary grouped = Summary.of(data
        .groupByKey(partitions)
        .mapValues(vs -> {
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
    Dataset<Row> df = spark.createDataset(
        data.map(t -> new Tuple2<>(t._1(), (int) t._2()[1])).rdd(),
        org.apache.spark.sql.Encoders.tuple(org.apache.spark.sql.Encoders.LONG(),
            org.apache.spark.sql.Encoders.INT())).toDF("key", "v");
    Summary agg = Summary.of(df.groupBy("key").agg(functions.count("v"), functions.sum("v"))
        .orderBy("key").javaRDD()
        .mapToPair(r -> new Tuple2<>(r.getLong(0), r.getLong(1) * 1_000_003L + r.getLong(2))));
    double seconds = (System.nanoTime() - start) / 1e9;

    String digest = String.format(Locale.ROOT, "%016x-%016x-%016x",
        reduced.hash, grouped.hash, agg.hash);
    boolean ordered = reduced.ordered && grouped.ordered && agg.ordered;
    String json = String.format(Locale.ROOT,
        "{\"shuffleManager\":\"%s\",\"provider\":\"%s\",\"records\":%d,\"wallSeconds\":%.3f,"
            + "\"resultRows\":%d,\"resultDigest\":\"%s\",\"ordered\":%b,"
            + "\"shuffleBytesWritten\":%d,\"remoteBytesRead\":%d,\"localBytesRead\":%d,"
            + "\"fetchWaitMs\":%d,\"recordsRead\":%d}",
        conf.get("spark.shuffle.manager", "sort"), conf.get("spark.shuffle.rdma.provider", "-"),
        records, seconds, reduced.rows + grouped.rows + agg.rows, digest, ordered,
        metrics.bytesWritten.get(), metrics.remoteBytes.get(), metrics.localBytes.get(),
        metrics.fetchWaitMs.get(), metrics.recordsRead.get());
    System.out.println("memwire-main-job result " + json);
    if (out != null) {
      Files.writeString(out, json + "\n");
    }
    if (!ordered) {
      throw new IllegalStateException("a sorted result was out of order: " + json);
    }
  }

  /**
   * A result's fingerprint computed where the data is: row count, an order-independent hash of
   * all (key, value) rows, and whether the rows were in ascending key order across partitions.
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
      List<long[]> parts = sorted.mapPartitionsWithIndex((idx, it) -> {
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
      }, true).collect();
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
