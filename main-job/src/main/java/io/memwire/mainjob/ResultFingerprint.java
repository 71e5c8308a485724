package io.memwire.mainjob;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaPairRDD;
import scala.Tuple2;

/**
 * A result's fingerprint computed where the data is: row count, an order-independent hash of all
 * (key, value) rows, and whether the rows were in ascending key order across partitions.
 * Independent of how the range partitioner split the keys, so two runs compare exactly.
 */
final class ResultFingerprint {
  final long rows;
  final long hash;
  final boolean ordered;

  ResultFingerprint(long rows, long hash, boolean ordered) {
    this.rows = rows;
    this.hash = hash;
    this.ordered = ordered;
  }

  static ResultFingerprint of(JavaPairRDD<Long, Long> sorted) {
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
    return new ResultFingerprint(rows, hash, ordered);
  }

  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
