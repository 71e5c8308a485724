package io.memwire.verbscheck;

import io.memwire.shuffle.metrics.ManagerCounters;
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
    return ManagerCounters.byExecutor(jsc, 2, EXECUTOR_WAIT);
  }

  /** One counter summed over the executors. */
  static long sum(Map<String, Map<String, Long>> stats, String key) {
    return stats.values().stream().mapToLong(v -> v.getOrDefault(key, 0L)).sum();
  }

  /** One counter of each executor that has it. */
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
}
