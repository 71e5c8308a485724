package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.metrics.EveryExecutor;
import io.memwire.shuffle.metrics.ExecutorCounters;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.testing.Await;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.spark.api.java.JavaSparkContext;

/** Starting test clusters and reading the executors' shuffle counters. */
final class Clusters {
  static final String MANAGER = RdmaShuffleManager.class.getName();

  /** Spark's fetch retries cut short: a dead peer costs a second, not 15. */
  static final Map<String, String> QUICK_FETCH_RETRIES =
      Map.of(
          "spark.shuffle.io.maxRetries", "1",
          "spark.shuffle.io.retryWait", "1s",
          "spark.shuffle.rdma.connectTimeout", "3s");

  private Clusters() {}

  /**
   * Dynamic allocation on 0 to 2 executors, idle ones released after 3 s, and {@link
   * #QUICK_FETCH_RETRIES}.
   */
  static void releaseIdleExecutors(Map<String, String> conf) {
    conf.put("spark.dynamicAllocation.enabled", "true");
    conf.put("spark.dynamicAllocation.executorIdleTimeout", "3s");
    conf.put("spark.dynamicAllocation.schedulerBacklogTimeout", "1s");
    conf.put("spark.dynamicAllocation.minExecutors", "0");
    conf.put("spark.dynamicAllocation.initialExecutors", "2");
    conf.put("spark.dynamicAllocation.maxExecutors", "2");
    conf.putAll(QUICK_FETCH_RETRIES);
  }

  /** Polls {@code condition} until it holds; fails with {@code what} after {@code timeout}. */
  static void await(Duration timeout, BooleanSupplier condition, Supplier<String> what)
      throws InterruptedException {
    Await.until(what, timeout, condition);
  }

  /** local-cluster[2,1,1024] with the given manager ("sort" or the RDMA one) and settings. */
  static LocalSparkCluster start(String manager, Map<String, String> conf) {
    return start(manager, conf, 2);
  }

  /** The same, waiting at start for only {@code await} executors (dynamic allocation). */
  static LocalSparkCluster start(String manager, Map<String, String> conf, int await) {
    return LocalSparkCluster.builder()
        .awaitExecutors(await)
        .executors(2)
        .coresPerExecutor(1)
        .memoryPerExecutorMb(1024)
        .appName("memwire-shuffle-test")
        .startupTimeout(Duration.ofSeconds(120))
        .conf("spark.shuffle.manager", manager)
        .conf("spark.shuffle.readHostLocalDisk", "false")
        .conf("spark.sql.shuffle.partitions", "16")
        .conf(conf)
        .start();
  }

  /** How long reading every executor may take. */
  private static final Duration EXECUTOR_WAIT = Duration.ofSeconds(60);

  /**
   * Each executor's {@link RdmaShuffleManager#stats()}, by executor id, once every registered
   * executor has answered (deadline 60 s).
   */
  static Map<String, Map<String, Long>> executorStats(JavaSparkContext jsc, int executors) {
    return ExecutorCounters.byExecutor(jsc, executors, EXECUTOR_WAIT);
  }

  /** The same, until each of {@code ids} has answered. */
  static Map<String, Map<String, Long>> executorStats(JavaSparkContext jsc, Set<String> ids) {
    return ExecutorCounters.byExecutor(jsc, ids, EXECUTOR_WAIT);
  }

  /** Sum of one counter over executors. */
  /**
   * Spark's remote bytes counted by {@code listener} were all read by the RDMA client between the
   * executors' counters {@code before} and {@code after}: none through Spark's transfer, no fetch
   * failure.
   */
  static void assertRemoteBytesOneSided(
      String name,
      TaskMetricsListener listener,
      Map<String, Map<String, Long>> before,
      Map<String, Map<String, Long>> after) {
    long sparkRemoteBytes = listener.remoteBytesRead.get();
    long rdmaBytes = sum(after, ShuffleMetrics.RDMA_BYTES) - sum(before, ShuffleMetrics.RDMA_BYTES);
    long fallback =
        sum(after, ShuffleMetrics.FALLBACK_BLOCKS) - sum(before, ShuffleMetrics.FALLBACK_BLOCKS);
    assertEquals(0, fallback, name + ": blocks went through Spark's transfer: " + after);
    assertTrue(sparkRemoteBytes > 0, name + ": no remote bytes at all");
    assertEquals(
        sparkRemoteBytes,
        rdmaBytes,
        name + ": Spark's remote bytes read must all come from the RDMA client");
    assertEquals(0, listener.fetchFailures.get(), name + ": fetch failures");
  }

  static long sum(Map<String, Map<String, Long>> stats, Metric metric) {
    return stats.values().stream().mapToLong(m -> ShuffleMetrics.get(m, metric)).sum();
  }

  /** A metric of the executors' transfer nodes ({@link ShuffleMetrics#node}), summed. */
  static long sumNode(Map<String, Map<String, Long>> stats, Metric transport) {
    String key = ShuffleMetrics.node(transport);
    return stats.values().stream().mapToLong(m -> m.getOrDefault(key, 0L)).sum();
  }

  /** Runs {@code task} on every executor (same coverage rule as {@link #executorStats}). */
  static Map<String, String> onEveryExecutor(
      JavaSparkContext jsc,
      int executors,
      org.apache.spark.api.java.function.Function<String, String> task) {
    return EveryExecutor.run(jsc, executors, EXECUTOR_WAIT, task);
  }
}
