package io.memwire.verbscheck;

import io.memwire.localcluster.RandomRecords;
import io.memwire.localcluster.SparkKeys;
import io.memwire.mainjob.ShuffleApp;
import io.memwire.mainjob.ShuffleAppResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import scala.Tuple2;

/**
 * The jobs the Spark check runs with every shuffle, each reduced to a digest that must equal the
 * sort shuffle's: the main job's application at a small size, 100 KiB values through {@code
 * groupByKey}, more than 2000 reduce partitions, and a sort-merge join under AQE.
 */
final class ComparedJobs {
  private ComparedJobs() {}

  /** A named job whose result digest is compared between shuffles. */
  record Job(String name, JobBody body) {
    String run(SparkSession s, JavaSparkContext jsc) throws Exception {
      return body.run(s, jsc);
    }
  }

  /** Runs a job; its result digest. */
  interface JobBody {
    String run(SparkSession s, JavaSparkContext jsc) throws Exception;
  }

  /** The jobs, in the order they run. */
  static List<Job> all() {
    return all(true);
  }

  /**
   * The jobs; {@code requireOneSided} false drops the main job's path check (every remote byte
   * one-sided under Memwire), for a run that makes Memwire fall back on purpose.
   */
  static List<Job> all(boolean requireOneSided) {
    return List.of(
        new Job(
            "shuffleApp",
            (s, jsc) -> {
              Path f = Files.createTempFile("shuffle-app", ".json");
              ShuffleApp.run(s, 20_000, 2_000, 100, 4, 8, f, requireOneSided);
              String digest = ShuffleAppResult.read(f).resultDigest();
              Files.delete(f);
              return digest;
            }),
        new Job(
            "groupByKey100KiB",
            (s, jsc) ->
                digest(
                    bigValues(jsc, 4, 40)
                        .groupByKey(8)
                        .mapToPair(
                            t -> {
                              long n = 0;
                              long h = 0;
                              for (byte[] v : t._2()) {
                                n++;
                                h += mix(Arrays.hashCode(v));
                              }
                              return new Tuple2<>(t._1(), n * 1_000_003L + h);
                            })
                        .collect())),
        new Job(
            "partitions2100",
            (s, jsc) -> {
              // More than 2000 reduce partitions: Spark switches to HighlyCompressedMapStatus; AQE
              // coalesces them into a few tasks that each read a range of partitions.
              s.conf().set(SparkKeys.SQL_SHUFFLE_PARTITIONS, "2100");
              try {
                Dataset<Row> df =
                    s.range(0, 60_000, 1, 4)
                        .withColumn("k", functions.expr("id % 3000"))
                        .groupBy("k")
                        .agg(functions.count("id"), functions.sum("id"));
                List<Tuple2<Long, Long>> rows =
                    df.javaRDD()
                        .map(
                            r ->
                                new Tuple2<>(
                                    r.getLong(0), r.getLong(1) * 1_000_003L + r.getLong(2)))
                        .collect();
                return digest(rows);
              } finally {
                s.conf().set(SparkKeys.SQL_SHUFFLE_PARTITIONS, "8");
              }
            }),
        new Job(
            "sortMergeJoinAqe",
            (s, jsc) -> {
              s.conf().set(SparkKeys.SQL_AUTO_BROADCAST_JOIN_THRESHOLD, "-1");
              s.conf().set(SparkKeys.SQL_ADAPTIVE_ENABLED, "true");
              try {
                Dataset<Row> a = s.range(0, 40_000, 1, 4).selectExpr("id % 7000 as k", "id as v");
                Dataset<Row> b =
                    s.range(0, 20_000, 1, 3).selectExpr("id % 5000 as k", "id * 3 as w");
                Dataset<Row> j = a.join(b, "k");
                List<Tuple2<Long, Long>> rows =
                    j.javaRDD()
                        .map(
                            r ->
                                new Tuple2<>(
                                    r.getLong(0), mix(r.getLong(1)) + 31 * mix(r.getLong(2))))
                        .collect();
                String plan = j.queryExecution().executedPlan().toString();
                if (!plan.contains("SortMergeJoin")) {
                  throw new IllegalStateException("the join was not a sort-merge join: " + plan);
                }
                return digest(rows);
              } finally {
                s.conf().unset(SparkKeys.SQL_AUTO_BROADCAST_JOIN_THRESHOLD);
              }
            }));
  }

  /** maps x perMap records of 100 KiB, keys 0..15 in turn, bytes fixed by (map, index). */
  private static JavaPairRDD<Long, byte[]> bigValues(JavaSparkContext jsc, int maps, int perMap) {
    return new RandomRecords(maps, perMap, 100 * 1024, 1, 7919, RandomRecords.keysInTurn(16))
        .rdd(jsc);
  }

  /** Row count and an order-independent hash of (key, value) rows. */
  private static String digest(List<Tuple2<Long, Long>> rows) {
    long h = 0;
    for (Tuple2<Long, Long> t : rows) {
      h += mix(t._1() * 0x9E3779B97F4A7C15L ^ mix(t._2()));
    }
    return rows.size() + ":" + Long.toHexString(h);
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
