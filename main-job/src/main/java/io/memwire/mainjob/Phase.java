package io.memwire.mainjob;

import io.memwire.shuffle.metrics.ExecutorCounters;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * What one phase of the main job (one or more runs of {@link ThreeShuffles}) did: its wall time,
 * its results, Spark's shuffle metrics, Memwire's manager counters (none with Spark's manager) and
 * the executors' CPU nanoseconds ({@link ExecutorCpuProbe#since}; empty when not measurable), each
 * as the difference between before and after the phase.
 */
record Phase(
    double seconds,
    ResultFingerprint[] results,
    Map<String, Long> spark,
    Map<String, Long> manager,
    Map<String, Long> cpu) {
  long spark(String key) {
    return spark.getOrDefault(key, 0L);
  }

  /** A manager counter over the phase; 0 without Memwire's counters (its jar may be absent). */
  long manager(ManagerCounter counter) {
    return manager.isEmpty() ? 0 : manager.getOrDefault(counter.key(), 0L);
  }

  /** Whether the manager reported counters for the phase (it runs, and is Memwire's). */
  boolean hasExecutorCounters() {
    return !manager.isEmpty();
  }

  private static final long COUNTERS_TIMEOUT_MS = 60_000;

  /** Runs the job {@code times} times; Spark's metrics and the manager's counters around it. */
  static Phase measure(SparkSession spark, SparkShuffleMetrics metrics, JobShape shape, int times)
      throws Exception {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Map<String, Long> before = managerCounters(jsc);
    spark.sparkContext().listenerBus().waitUntilEmpty(COUNTERS_TIMEOUT_MS);
    Map<String, Long> sparkBefore = metrics.snapshot();
    Object cpuBefore = ExecutorCpuProbe.take();
    long start = System.nanoTime();
    ResultFingerprint[] results = null;
    for (int i = 0; i < times; i++) {
      results = ThreeShuffles.run(spark, shape);
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    Map<String, Long> cpu = ExecutorCpuProbe.since(cpuBefore);
    spark.sparkContext().listenerBus().waitUntilEmpty(COUNTERS_TIMEOUT_MS);
    Map<String, Long> sparkAfter = metrics.snapshot();
    Map<String, Long> after = managerCounters(jsc);
    Map<String, Long> sparkDelta = new HashMap<>();
    sparkAfter.forEach((k, v) -> sparkDelta.put(k, v - sparkBefore.getOrDefault(k, 0L)));
    Map<String, Long> managerDelta = new HashMap<>();
    if (!after.isEmpty()) {
      String level = ManagerCounter.OPEN_CONNECTIONS.key();
      after.forEach(
          (k, v) -> managerDelta.put(k, k.equals(level) ? v : v - before.getOrDefault(k, 0L)));
    }
    return new Phase(seconds, results, sparkDelta, managerDelta, cpu);
  }

  /**
   * Memwire's shuffle manager counters summed over the executors ({@link ExecutorCounters}), or
   * none when Memwire's jar is not on this driver's class path (Spark's own manager is measured).
   * Either way a tiny job of a few tasks per executor runs, so both configurations' phases start
   * alike.
   */
  private static Map<String, Long> managerCounters(JavaSparkContext jsc) {
    try {
      return ExecutorCounters.sum(jsc, Duration.ofMillis(COUNTERS_TIMEOUT_MS));
    } catch (NoClassDefFoundError noMemwire) {
      int tasks = 4 * Math.max(1, jsc.sc().statusTracker().getExecutorInfos().length - 1);
      jsc.parallelize(IntStream.range(0, tasks).boxed().toList(), tasks).count();
      return new HashMap<>();
    }
  }

  /** Both phases as one: times and counts added, {@code a}'s results. */
  static Phase plus(Phase a, Phase b) {
    Map<String, Long> sparkSum = new HashMap<>(a.spark());
    b.spark().forEach((k, v) -> sparkSum.merge(k, v, Long::sum));
    Map<String, Long> managerSum = new HashMap<>(a.manager());
    b.manager().forEach((k, v) -> managerSum.merge(k, v, Long::sum));
    Map<String, Long> cpuSum = new HashMap<>(a.cpu());
    b.cpu().forEach((k, v) -> cpuSum.merge(k, v, Long::sum));
    return new Phase(a.seconds() + b.seconds(), a.results(), sparkSum, managerSum, cpuSum);
  }
}
