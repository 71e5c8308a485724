package io.memwire.verbscheck;

import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.metrics.EveryExecutor;
import io.memwire.shuffle.metrics.ExecutorCounters;
import io.memwire.transfer.metrics.Metric;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.JavaSparkContext;

/** Memwire's manager counters read from every executor of the check's cluster. */
final class ExecutorStats {
  private ExecutorStats() {}

  /** How long a check waits for every executor to answer a small job. */
  static final Duration EXECUTOR_WAIT = Duration.ofMinutes(10);

  /** Memwire's manager counters of each executor. */
  static Map<String, Map<String, Long>> byExecutor(JavaSparkContext jsc) {
    return ExecutorCounters.byExecutor(jsc, 2, EXECUTOR_WAIT);
  }

  /** One counter summed over the executors. */
  static long sum(Map<String, Map<String, Long>> stats, Metric metric) {
    return stats.values().stream().mapToLong(v -> ShuffleMetrics.get(v, metric)).sum();
  }

  /** {@code sum(after) - sum(before)} of one counter. */
  static long delta(
      Map<String, Map<String, Long>> before, Map<String, Map<String, Long>> after, Metric metric) {
    return sum(after, metric) - sum(before, metric);
  }

  /** One counter of each executor that has it, by its key in the manager's stats. */
  static Map<String, Long> perExecutor(Map<String, Map<String, Long>> stats, String key) {
    Map<String, Long> m = new TreeMap<>();
    stats.forEach(
        (id, v) -> {
          if (v.containsKey(key)) {
            m.put(id, v.get(key));
          }
        });
    return m;
  }

  /**
   * Each executor's transport ({@code RdmaShuffleManager.transportDescription()}, started here: on
   * Spark 3.5 it starts at first use), prefixed with {@code SPARK_LOCAL_IP} and a space when {@code
   * withHost}; "no manager" where no Memwire manager runs.
   */
  static Map<String, String> transports(JavaSparkContext jsc, boolean withHost) {
    return EveryExecutor.run(
        jsc,
        2,
        EXECUTOR_WAIT,
        id -> {
          RdmaShuffleManager m = RdmaShuffleManager.current();
          if (m == null) {
            return "no manager";
          }
          m.startTransport();
          return (withHost ? System.getenv("SPARK_LOCAL_IP") + " " : "") + m.transportDescription();
        });
  }
}
