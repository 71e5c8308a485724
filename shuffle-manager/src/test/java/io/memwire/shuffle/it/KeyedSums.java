package io.memwire.shuffle.it;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * The cluster tests' two-stage job: values {@code i * 7 + seed} summed by {@code value % keys}, and
 * the same answer computed without Spark.
 */
final class KeyedSums {
  private static final int RECORDS = 40_000;

  private KeyedSums() {}

  static JavaPairRDD<Integer, Long> rdd(
      JavaSparkContext jsc, int seed, int keys, int maps, int reducers) {
    List<Integer> data = IntStream.range(0, RECORDS).map(i -> i * 7 + seed).boxed().toList();
    return jsc.parallelize(data, maps)
        .mapToPair(x -> new Tuple2<>(x % keys, (long) x))
        .reduceByKey(Long::sum, reducers);
  }

  static Map<Integer, Long> expected(int seed, int keys) {
    Map<Integer, Long> m = new HashMap<>();
    for (int i = 0; i < RECORDS; i++) {
      int x = i * 7 + seed;
      m.merge(x % keys, (long) x, Long::sum);
    }
    return m;
  }
}
