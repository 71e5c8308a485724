package io.memwire.tpcds;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.ShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleManager;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.sort.SortShuffleManager;

/**
 * A deliberately wrong shuffle manager for tests: Spark's sort shuffle, except that every reader
 * silently drops every tenth record it reads. The benchmark's answer verification must catch it.
 */
public final class RowDroppingShuffleManager implements ShuffleManager {
  private final SortShuffleManager delegate;

  /** Constructed by Spark on the driver and on each executor. */
  public RowDroppingShuffleManager(SparkConf conf, boolean isDriver) {
    this.delegate = new SortShuffleManager(conf);
  }

  @Override
  public <K, V, C> ShuffleHandle registerShuffle(
      int shuffleId, ShuffleDependency<K, V, C> dependency) {
    return delegate.registerShuffle(shuffleId, dependency);
  }

  @Override
  public <K, V> ShuffleWriter<K, V> getWriter(
      ShuffleHandle handle, long mapId, TaskContext context, ShuffleWriteMetricsReporter metrics) {
    return delegate.getWriter(handle, mapId, context, metrics);
  }

  @Override
  public <K, C> ShuffleReader<K, C> getReader(
      ShuffleHandle handle,
      int startMapIndex,
      int endMapIndex,
      int startPartition,
      int endPartition,
      TaskContext context,
      ShuffleReadMetricsReporter metrics) {
    ShuffleReader<K, C> reader =
        delegate.getReader(
            handle, startMapIndex, endMapIndex, startPartition, endPartition, context, metrics);
    return () -> {
      long[] seen = {0};
      return reader.read().filter(record -> ++seen[0] % 10 != 0);
    };
  }

  @Override
  public boolean unregisterShuffle(int shuffleId) {
    return delegate.unregisterShuffle(shuffleId);
  }

  @Override
  public ShuffleBlockResolver shuffleBlockResolver() {
    return delegate.shuffleBlockResolver();
  }

  @Override
  public void stop() {
    delegate.stop();
  }
}
