package io.memwire.shuffle.it;

import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

/**
 * The shuffle jobs every differential test runs, each reduced to a list of strings that must be
 * equal, element by element, under Spark's SortShuffleManager and under the RDMA manager. Inputs
 * are generated from fixed seeds.
 */
final class ShuffleJobs {
  private ShuffleJobs() {}

  /** Jobs by name; {@code large} adds the ones with more than 2000 reduce partitions. */
  static Map<String, Function<SparkSession, List<String>>> all(boolean large) {
    Map<String, Function<SparkSession, List<String>>> jobs = new LinkedHashMap<>();
    jobs.put("reduceByKey", ShuffleJobs::reduceByKey);
    jobs.put("groupByKey", ShuffleJobs::groupByKey);
    jobs.put("sortByKey", ShuffleJobs::sortByKey);
    jobs.put("join", ShuffleJobs::join);
    jobs.put("repartition", ShuffleJobs::repartition);
    jobs.put("dataFrameGroupByAgg", ShuffleJobs::dataFrameAgg);
    jobs.put("dataFrameJoin", ShuffleJobs::dataFrameJoin);
    jobs.put("emptyPartitions", ShuffleJobs::emptyPartitions);
    jobs.put("skewedKey", ShuffleJobs::skewedKey);
    jobs.put("largeRecords", ShuffleJobs::largeRecords);
    jobs.put("manySmallMaps", ShuffleJobs::manySmallMaps);
    if (large) {
      jobs.put("over2000Partitions", ShuffleJobs::over2000Partitions);
    }
    return jobs;
  }

  static JavaSparkContext jsc(SparkSession s) {
    return JavaSparkContext.fromSparkContext(s.sparkContext());
  }

  static List<Integer> randomInts(int n, long seed, int bound) {
    Random r = new Random(seed);
    return IntStream.range(0, n).map(i -> r.nextInt(bound)).boxed().collect(Collectors.toList());
  }

  static <T> List<String> sorted(List<T> items) {
    List<String> out = items.stream().map(String::valueOf).collect(Collectors.toList());
    Collections.sort(out);
    return out;
  }

  static List<String> reduceByKey(SparkSession s) {
    JavaPairRDD<Integer, Long> sums =
        jsc(s)
            .parallelize(randomInts(200_000, 1, 1_000_000), 6)
            .mapToPair(x -> new Tuple2<>(x % 5000, (long) x))
            .reduceByKey(Long::sum, 7);
    return sorted(sums.collect());
  }

  static List<String> groupByKey(SparkSession s) {
    List<Tuple2<Integer, List<Integer>>> groups =
        jsc(s)
            .parallelize(randomInts(40_000, 2, 1_000_000), 5)
            .mapToPair(x -> new Tuple2<>(x % 1000, x))
            .groupByKey(6)
            .mapValues(
                vs -> {
                  List<Integer> l = new ArrayList<>();
                  vs.forEach(l::add);
                  Collections.sort(l);
                  return l;
                })
            .collect();
    return sorted(groups);
  }

  static List<String> sortByKey(SparkSession s) {
    List<Integer> keys = IntStream.range(0, 60_000).boxed().collect(Collectors.toList());
    Collections.shuffle(keys, new Random(3));
    return jsc(s)
        .parallelize(keys, 6)
        .mapToPair(k -> new Tuple2<>(k, "v" + (k * 7919L % 100_003)))
        .sortByKey(true, 5)
        .collect()
        .stream()
        .map(String::valueOf)
        .collect(Collectors.toList());
  }

  static List<String> join(SparkSession s) {
    JavaPairRDD<Integer, String> left =
        jsc(s)
            .parallelize(randomInts(30_000, 4, 20_000), 4)
            .mapToPair(x -> new Tuple2<>(x, "L" + x));
    JavaPairRDD<Integer, Integer> right =
        jsc(s).parallelize(randomInts(30_000, 5, 20_000), 3).mapToPair(x -> new Tuple2<>(x, x * 3));
    return sorted(left.join(right, 5).collect());
  }

  static List<String> repartition(SparkSession s) {
    return sorted(
        jsc(s)
            .parallelize(randomInts(50_000, 6, Integer.MAX_VALUE), 3)
            .map(x -> "r" + x)
            .repartition(9)
            .collect());
  }

  static List<String> dataFrameAgg(SparkSession s) {
    Dataset<Row> df = s.range(0, 400_000).selectExpr("id % 1000 as k", "id * 3 % 1001 as v");
    return df
        .groupBy("k")
        .agg(
            org.apache.spark.sql.functions.sum("v"),
            org.apache.spark.sql.functions.count("v"),
            org.apache.spark.sql.functions.max("v"))
        .collectAsList()
        .stream()
        .map(Row::toString)
        .sorted()
        .collect(Collectors.toList());
  }

  static List<String> dataFrameJoin(SparkSession s) {
    Dataset<Row> a = s.range(0, 200_000).selectExpr("id % 50000 as k", "id as a");
    Dataset<Row> b = s.range(0, 100_000).selectExpr("id % 70000 as k", "id * 2 as b");
    return a
        .join(b, "k")
        .groupBy("k")
        .agg(
            org.apache.spark.sql.functions.sum("a"),
            org.apache.spark.sql.functions.sum("b"),
            org.apache.spark.sql.functions.count("a"))
        .collectAsList()
        .stream()
        .map(Row::toString)
        .sorted()
        .collect(Collectors.toList());
  }

  static List<String> emptyPartitions(SparkSession s) {
    // 10 records in 20 map partitions, 50 reduce partitions: most maps and reducers are empty.
    return sorted(
        jsc(s)
            .parallelize(randomInts(10, 7, 100), 20)
            .mapToPair(x -> new Tuple2<>(x, 1))
            .reduceByKey(Integer::sum, 50)
            .collect());
  }

  static List<String> skewedKey(SparkSession s) {
    List<Integer> data = randomInts(150_000, 8, 10_000);
    return sorted(
        jsc(s)
            .parallelize(data, 6)
            .mapToPair(x -> new Tuple2<>(x % 10 < 6 ? 0 : x, (long) x))
            .groupByKey(4)
            .mapValues(
                vs -> {
                  long n = 0;
                  long sum = 0;
                  for (long v : vs) {
                    n++;
                    sum += v;
                  }
                  return n + "/" + sum;
                })
            .collect());
  }

  static List<String> largeRecords(SparkSession s) {
    // 48 records of 300 KiB: blocks far larger than a read batch in the small-batch variant.
    return sorted(
        jsc(s)
            .parallelize(IntStream.range(0, 48).boxed().collect(Collectors.toList()), 6)
            .mapToPair(
                i -> {
                  byte[] b = new byte[300 * 1024];
                  new Random(i).nextBytes(b);
                  return new Tuple2<>(i % 4, b);
                })
            .groupByKey(3)
            .mapValues(
                vs -> {
                  List<String> hashes = new ArrayList<>();
                  for (byte[] b : vs) {
                    hashes.add(
                        HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b)));
                  }
                  Collections.sort(hashes);
                  return hashes;
                })
            .collect());
  }

  static List<String> manySmallMaps(SparkSession s) {
    return sorted(
        jsc(s)
            .parallelize(randomInts(6_000, 9, 500), 300)
            .mapToPair(x -> new Tuple2<>(x, 1L))
            .reduceByKey(Long::sum, 4)
            .collect());
  }

  static List<String> over2000Partitions(SparkSession s) {
    // More than 2000 reduce partitions: Spark sends HighlyCompressedMapStatus (average sizes).
    return sorted(
        jsc(s)
            .parallelize(randomInts(30_000, 10, 1_000_000), 4)
            .mapToPair(x -> new Tuple2<>(x, 1L))
            .reduceByKey(Long::sum, 2100)
            .filter(t -> t._1() % 7 == 0)
            .collect());
  }
}
