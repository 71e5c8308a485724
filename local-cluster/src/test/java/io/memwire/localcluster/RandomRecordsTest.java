package io.memwire.localcluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * The one workload generator makes exactly the records the main job and the verbs check made before
 * they shared it, so digests of earlier runs (the verbs check's {@code --reference}) still compare.
 */
class RandomRecordsTest {

  @Test
  void theMainJobsRecordsAreUnchanged() {
    int valueBytes = 100; // not a multiple of 8: the last long is cut short
    int keys = 2_000;
    RandomRecords records =
        new RandomRecords(4, 50, valueBytes, 42L * 1_000_003, 1, RandomRecords.uniformKeys(keys));
    for (int m = 0; m < 4; m++) {
      // How ShuffleApp made map task m's records before.
      SplittableRandom r = new SplittableRandom(42L * 1_000_003 + m);
      Iterator<Tuple2<Long, byte[]>> it = records.mapTask(m);
      for (int i = 0; i < 50; i++) {
        byte[] v = new byte[valueBytes];
        for (int j = 0; j < valueBytes; j += 8) {
          long x = r.nextLong();
          for (int b = 0; b < 8 && j + b < valueBytes; b++) {
            v[j + b] = (byte) (x >>> (8 * b));
          }
        }
        long key = r.nextInt(keys);
        Tuple2<Long, byte[]> got = it.next();
        assertEquals(key, got._1(), "map " + m + " record " + i);
        assertArrayEquals(v, got._2(), "map " + m + " record " + i);
      }
      assertFalse(it.hasNext());
      assertThrows(NoSuchElementException.class, it::next);
    }
  }

  @Test
  void theVerbsChecksBigValuesAreUnchanged() {
    int perMap = 3;
    RandomRecords records =
        new RandomRecords(2, perMap, 100 * 1024, 1, 7919, RandomRecords.keysInTurn(16));
    for (int m = 0; m < 2; m++) {
      // How SparkCheck made its 100 KiB values before.
      SplittableRandom r = new SplittableRandom(7919L * m + 1);
      Iterator<Tuple2<Long, byte[]>> it = records.mapTask(m);
      for (int i = 0; i < perMap; i++) {
        byte[] v = new byte[100 * 1024];
        for (int j = 0; j < v.length; j += 8) {
          long x = r.nextLong();
          for (int b = 0; b < 8; b++) {
            v[j + b] = (byte) (x >>> (8 * b));
          }
        }
        Tuple2<Long, byte[]> got = it.next();
        assertEquals((long) ((m * perMap + i) % 16), got._1());
        assertArrayEquals(v, got._2());
      }
      assertFalse(it.hasNext());
    }
  }
}
