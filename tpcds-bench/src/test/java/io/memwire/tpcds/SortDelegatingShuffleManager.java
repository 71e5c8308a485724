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
 * Spark's sort shuffle with one hook on the reduce side, for test managers that break it on
 * purpose: subclasses wrap (or refuse) the sort shuffle's reader in {@link #read}.
 */
abstract class SortDelegatingShuffleManager implements ShuffleManager {
  private final SortShuffleManager delegate;

  SortDelegatingShuffleManager(SparkConf conf) {
    this.delegate = new SortShuffleManager(conf);
  }

  /** The reader a task gets, given the sort shuffle's own reader for the same blocks. */
  abstract <K, C> ShuffleReader<K, C> read(ShuffleReader<K, C> sortReader, TaskContext context);

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
    return read(
        delegate.getReader(
            handle, startMapIndex, endMapIndex, startPartition, endPartition, context, metrics),
        context);
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
