package io.memwire.tpcds;

import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.ShuffleReader;

/**
 * A deliberately failing shuffle manager for tests: Spark's sort shuffle, except that every reader
 * of a query named by {@value #QUERY_KEY} (matched on the end of the job group the benchmark gives
 * each query) throws. The benchmark must record that query as failed and go on with the others.
 */
public final class QueryFailingShuffleManager extends SortDelegatingShuffleManager {
  /** The query whose shuffle reads fail, e.g. {@code q3}. */
  public static final String QUERY_KEY = "spark.memwire.test.failQuery";

  private final String query;

  /** Constructed by Spark on the driver and on each executor. */
  public QueryFailingShuffleManager(SparkConf conf, boolean isDriver) {
    super(conf);
    this.query = conf.get(QUERY_KEY);
  }

  @Override
  <K, C> ShuffleReader<K, C> read(ShuffleReader<K, C> sortReader, TaskContext context) {
    String group = context.getLocalProperty("spark.jobGroup.id");
    if (group != null && group.endsWith("-" + query)) {
      throw new IllegalStateException("test: shuffle reads of " + query + " fail");
    }
    return sortReader;
  }
}
