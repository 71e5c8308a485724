package io.memwire.mainjob;

import io.memwire.localcluster.RandomRecords;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import scala.Tuple2;

/**
 * The job the main job times: {@link RandomRecords} shuffled three ways, {@code reduceByKey}
 * (map-side combine) then {@code sortByKey}, {@code groupByKey} then {@code sortByKey} (every value
 * crosses the network), and a DataFrame {@code groupBy/agg} ordered by key.
 */
final class ThreeShuffles {
  private ThreeShuffles() {}

  /** Runs the three shuffles over {@code shape}'s records; their fingerprints in that order. */
  static ResultFingerprint[] run(SparkSession spark, JobShape shape) {
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
    ResultFingerprint reduced =
        ResultFingerprint.of(
            data.mapValues(v -> (long) v[0])
                .reduceByKey(Long::sum, partitions)
                .sortByKey(true, partitions));
    // 2. groupByKey then sortByKey: every value crosses the network.
    ResultFingerprint grouped =
        ResultFingerprint.of(
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
    ResultFingerprint agg =
        ResultFingerprint.of(
            df.groupBy("key")
                .agg(functions.count("v"), functions.sum("v"))
                .orderBy("key")
                .javaRDD()
                .mapToPair(
                    r -> new Tuple2<>(r.getLong(0), r.getLong(1) * 1_000_003L + r.getLong(2))));
    return new ResultFingerprint[] {reduced, grouped, agg};
  }
}
