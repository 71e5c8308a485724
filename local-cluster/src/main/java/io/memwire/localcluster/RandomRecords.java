package io.memwire.localcluster;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * The workload of the main job, the verbs check and the shuffle benchmark: random (key, value)
 * records made on the executors, by every map task for itself, and the same in every run (map task
 * {@code m} draws from a generator seeded with {@code firstSeed + m * seedStride}). A record's
 * value is {@code valueBytes} random bytes; its key comes from {@link Keys}, drawn after the value.
 *
 * @param maps map tasks (partitions of the generated data set)
 * @param perMap records each map task makes
 * @param valueBytes bytes of every value
 * @param firstSeed the seed of map task 0
 * @param seedStride how far apart the seeds of consecutive map tasks are
 * @param keys how a record's key is chosen
 */
public record RandomRecords(
    int maps, long perMap, int valueBytes, long firstSeed, long seedStride, Keys keys)
    implements Serializable {
  private static final long serialVersionUID = 1L;

  /** How a record's key is chosen; runs on the executors, so it travels with the job. */
  @FunctionalInterface
  public interface Keys extends Serializable {
    /**
     * The key of the record numbered {@code index} over the whole data set (map task {@code m}'s
     * first is {@code m * perMap}), from the map task's generator if it needs randomness.
     */
    long key(SplittableRandom random, long index);
  }

  /** Keys drawn uniformly from {@code [0, keys)}. */
  public static Keys uniformKeys(int keys) {
    return (random, index) -> random.nextInt(keys);
  }

  /** Keys {@code 0, 1, ..., keys - 1, 0, 1, ...} in record order. */
  public static Keys keysInTurn(int keys) {
    return (random, index) -> index % keys;
  }

  /** The records as an RDD of {@link #maps} partitions, made when a job reads them. */
  public JavaPairRDD<Long, byte[]> rdd(JavaSparkContext jsc) {
    List<Integer> mapIds = new ArrayList<>();
    for (int i = 0; i < maps; i++) {
      mapIds.add(i);
    }
    return jsc.parallelize(mapIds, maps).flatMapToPair(this::mapTask);
  }

  /** Map task {@code m}'s records, made one at a time as they are read. */
  Iterator<Tuple2<Long, byte[]>> mapTask(int m) {
    SplittableRandom random = new SplittableRandom(firstSeed + m * seedStride);
    long first = m * perMap;
    return new Iterator<>() {
      long made;

      @Override
      public boolean hasNext() {
        return made < perMap;
      }

      @Override
      public Tuple2<Long, byte[]> next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        byte[] value = new byte[valueBytes];
        fill(random, value);
        long key = keys.key(random, first + made);
        made++;
        return new Tuple2<>(key, value);
      }
    };
  }

  /**
   * Fills {@code value} with the bytes of successive {@code nextLong()}s, lowest byte first:
   * spelled out rather than {@code nextBytes}, so the data (and the digests of earlier runs) stay
   * the same whatever the JDK does there.
   */
  static void fill(SplittableRandom random, byte[] value) {
    for (int j = 0; j < value.length; j += 8) {
      long x = random.nextLong();
      for (int b = 0; b < 8 && j + b < value.length; b++) {
        value[j + b] = (byte) (x >>> (8 * b));
      }
    }
  }
}
