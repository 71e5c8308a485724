package io.memwire.shuffle.metrics;

import io.memwire.shuffle.RdmaShuffleManager;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The shuffle manager's raw counters ({@link RdmaShuffleManager#stats()}) read from the executors
 * on demand, for programs that compare runs (the main job, TPC-DS, tests). Unlike {@link
 * MemwireMetricsPlugin} it needs no plugin: it asks every executor with {@link EveryExecutor}.
 * Where no Memwire manager runs (Spark's sort shuffle), an executor answers an empty map.
 */
public final class ExecutorCounters {
  private ExecutorCounters() {}

  /**
   * Each executor's counters, by executor id, from at least {@code executors} executors.
   *
   * @throws IllegalStateException when not enough executors answered within {@code timeout}
   */
  public static Map<String, Map<String, Long>> byExecutor(
      JavaSparkContext jsc, int executors, Duration timeout) {
    return EveryExecutor.run(jsc, executors, timeout, id -> local());
  }

  /** The same, until each executor of {@code ids} has answered. */
  public static Map<String, Map<String, Long>> byExecutor(
      JavaSparkContext jsc, Set<String> ids, Duration timeout) {
    return EveryExecutor.run(jsc, ids, timeout, id -> local());
  }

  /**
   * The counters summed over the executors registered now.
   *
   * @throws IllegalStateException when not every executor answered within {@code timeout}
   */
  public static Map<String, Long> sum(JavaSparkContext jsc, Duration timeout) {
    Map<String, Long> sum = new HashMap<>();
    for (Map<String, Long> m : byExecutor(jsc, EveryExecutor.registered(jsc), timeout).values()) {
      m.forEach((k, v) -> sum.merge(k, v, Long::sum));
    }
    return sum;
  }

  /** {@code after - before} for {@code key} (0 when absent). */
  public static long delta(Map<String, Long> before, Map<String, Long> after, String key) {
    return after.getOrDefault(key, 0L) - before.getOrDefault(key, 0L);
  }

  /** This JVM's counters: empty where no Memwire manager runs. */
  private static Map<String, Long> local() {
    RdmaShuffleManager m = RdmaShuffleManager.current();
    return m == null ? new HashMap<>() : new LinkedHashMap<>(m.stats());
  }
}
