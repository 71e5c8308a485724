package io.memwire.mainjob;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.apache.spark.sql.SparkSession;

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
      JobShape shape = new JobShape(records, keys, valueBytes, maps, partitions);
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
   * {@link #run(SparkSession, long, int, int, int, int, Path)}; {@code requireOneSided} false drops
   * the path check (every remote byte one-sided under Memwire), for a check that makes Memwire fall
   * back on purpose (a fabric pitfall).
   */
  public static void run(
      SparkSession spark,
      long records,
      int keys,
      int valueBytes,
      int maps,
      int partitions,
      Path out,
      boolean requireOneSided)
      throws Exception {
    SparkShuffleMetrics metrics = new SparkShuffleMetrics();
    spark.sparkContext().addSparkListener(metrics);
    Round.run(
        spark,
        metrics,
        new JobShape(records, keys, valueBytes, maps, partitions),
        0,
        0,
        out,
        null,
        requireOneSided);
  }

  /**
   * One round in this application ({@link Round}: a small job, the main job, the small job {@code
   * smallRepeats} more times).
   */
  static void run(
      SparkSession spark, JobShape shape, int smallRepeats, double readySeconds, Path out)
      throws Exception {
    SparkShuffleMetrics metrics = new SparkShuffleMetrics();
    spark.sparkContext().addSparkListener(metrics);
    Round.run(spark, metrics, shape, smallRepeats, readySeconds, out, null, true);
  }

  /** Round {@code r}'s result file when an application runs several: {@code <out>-<r>.json}. */
  static Path roundFile(Path out, int round) {
    String name = out.getFileName().toString();
    String stem = name.endsWith(".json") ? name.substring(0, name.length() - 5) : name;
    return out.resolveSibling(stem + "-" + round + ".json");
  }

  /** {@code rounds} rounds in this application, each after the first on a line of input. */
  static void runRounds(
      SparkSession spark,
      JobShape shape,
      int smallRepeats,
      double readySeconds,
      Path out,
      int rounds)
      throws Exception {
    SparkShuffleMetrics metrics = new SparkShuffleMetrics();
    spark.sparkContext().addSparkListener(metrics);
    BufferedReader input =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Phase cold = null;
    for (int r = 1; r <= rounds; r++) {
      if (r > 1 && input.readLine() == null) {
        return; // the launcher is done with this application
      }
      cold =
          Round.run(
              spark, metrics, shape, smallRepeats, readySeconds, roundFile(out, r), cold, true);
    }
  }

  /** The median of sorted values. */
  static double median(List<Double> sorted) {
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }
}
