package io.memwire.tpcds;

import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.ShuffleReader;

/**
 * A deliberately wrong shuffle manager for tests: Spark's sort shuffle, except that every reader
 * silently drops every tenth record it reads. The benchmark's answer verification must catch it.
 */
public final class RowDroppingShuffleManager extends SortDelegatingShuffleManager {
  /** Constructed by Spark on the driver and on each executor. */
  public RowDroppingShuffleManager(SparkConf conf, boolean isDriver) {
    super(conf);
  }

  @Override
  <K, C> ShuffleReader<K, C> read(ShuffleReader<K, C> sortReader, TaskContext context) {
    return () -> {
      long[] seen = {0};
      return sortReader.read().filter(record -> ++seen[0] % 10 != 0);
    };
  }
}
