package io.memwire.mainjob;

import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import scala.Tuple2;

/**
 * Reads the shuffle manager's own counters (Memwire's {@code RdmaShuffleManager.stats()}) from
 * every executor and sums them: a tiny job with a few tasks per executor, repeated until each
 * executor answered. The counters live in the executors; this one class reads them so that a
 * per-application source (a metrics plugin) can replace it. Found by reflection through {@link
 * SparkEnv}: the application needs no Memwire class, and Spark's sort shuffle gives an empty map.
 */
public final class ManagerCounters {
  private ManagerCounters() {}

  /**
   * The counters summed over the executors registered now.
   *
   * @throws IllegalStateException when not every executor answered within {@code timeoutMs}
   */
  public static Map<String, Long> sum(JavaSparkContext jsc, long timeoutMs) {
    int executors = Math.max(1, jsc.sc().statusTracker().getExecutorInfos().length - 1);
    Map<String, Map<String, Long>> seen = new HashMap<>();
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    while (seen.size() < executors) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "shuffle manager counters: only executors "
                + seen.keySet()
                + " of "
                + executors
                + " answered within "
                + timeoutMs
                + " ms");
      }
      int tasks = 4 * executors;
      List<Integer> slots = IntStream.range(0, tasks).boxed().collect(Collectors.toList());
      for (Tuple2<String, Map<String, Long>> t :
          jsc.parallelize(slots, tasks).mapPartitions(new ReadStats()).collect()) {
        seen.put(t._1(), t._2());
      }
    }
    Map<String, Long> sum = new HashMap<>();
    for (Map<String, Long> m : seen.values()) {
      m.forEach((k, v) -> sum.merge(k, v, Long::sum));
    }
    return sum;
  }

  /** {@code after - before} for {@code key} (0 when absent). */
  public static long delta(Map<String, Long> before, Map<String, Long> after, String key) {
    return after.getOrDefault(key, 0L) - before.getOrDefault(key, 0L);
  }

  /** The executor side: this executor's id and its manager's counters. */
  private static final class ReadStats
      implements FlatMapFunction<Iterator<Integer>, Tuple2<String, Map<String, Long>>> {
    private static final long serialVersionUID = 1L;

    @Override
    public Iterator<Tuple2<String, Map<String, Long>>> call(Iterator<Integer> slots)
        throws Exception {
      SparkEnv env = SparkEnv.get();
      return List.of(new Tuple2<>(env.executorId(), stats(env.shuffleManager()))).iterator();
    }

    private static Map<String, Long> stats(Object manager) throws ReflectiveOperationException {
      Method m;
      try {
        m = manager.getClass().getMethod("stats");
      } catch (NoSuchMethodException e) {
        return new HashMap<>();
      }
      Map<String, Long> out = new HashMap<>();
      if (m.invoke(manager) instanceof Map<?, ?> stats) {
        stats.forEach(
            (k, v) -> {
              if (v instanceof Number n) {
                out.put(String.valueOf(k), n.longValue());
              }
            });
      }
      return out;
    }
  }
}
