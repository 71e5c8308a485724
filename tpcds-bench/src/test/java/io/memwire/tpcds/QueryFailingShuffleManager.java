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
 * A deliberately failing shuffle manager for tests: Spark's sort shuffle, except that every reader
 * of a query named by {@value #QUERY_KEY} (matched on the end of the job group the benchmark gives
 * each query) throws. The benchmark must record that query as failed and go on with the others.
 */
public final class QueryFailingShuffleManager implements ShuffleManager {
  /** The query whose shuffle reads fail, e.g. {@code q3}. */
  public static final String QUERY_KEY = "spark.memwire.test.failQuery";

  private final SortShuffleManager delegate;
  private final String query;

  /** Constructed by Spark on the driver and on each executor. */
  public QueryFailingShuffleManager(SparkConf conf, boolean isDriver) {
    this.delegate = new SortShuffleManager(conf);
    this.query = conf.get(QUERY_KEY);
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
    String group = context.getLocalProperty("spark.jobGroup.id");
    if (group != null && group.endsWith("-" + query)) {
      throw new IllegalStateException("test: shuffle reads of " + query + " fail");
    }
    return delegate.getReader(
        handle, startMapIndex, endMapIndex, startPartition, endPartition, context, metrics);
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
