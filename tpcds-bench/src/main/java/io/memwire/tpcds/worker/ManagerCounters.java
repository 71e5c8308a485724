package io.memwire.tpcds.worker;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import scala.Tuple2;

/**
 * Reads the shuffle manager's own counters (Memwire's {@code RdmaShuffleManager.stats()}) from
 * every executor and sums them: a tiny job with a few tasks per executor, repeated until each
 * executor answered. The counters live in the executors, so this is the only way a driver sees
 * which path moved the bytes; it stays in this one class so that a per-application source (a
 * metrics plugin) can replace it.
 *
 * <p>A manager without a {@code stats()} method (Spark's sort shuffle) gives an empty map. The
 * manager is found through {@link SparkEnv}, by reflection, so this module needs no compile-time
 * Memwire dependency and works on executors that do not have Memwire at all.
 */
public final class ManagerCounters {
  private ManagerCounters() {}

  /**
   * The counters summed over all executors registered now (empty when their managers keep none).
   *
   * @throws TimeoutException when not every executor answered within {@code timeout}
   */
  public static Map<String, Long> sum(JavaSparkContext jsc, Duration timeout)
      throws TimeoutException {
    int executors = Math.max(1, jsc.sc().statusTracker().getExecutorInfos().length - 1);
    Map<String, Map<String, Long>> seen = new HashMap<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (seen.size() < executors) {
      if (System.nanoTime() > deadline) {
        throw new TimeoutException(
            "shuffle manager counters: only executors "
                + seen.keySet()
                + " of "
                + executors
                + " answered within "
                + timeout.toSeconds()
                + " s");
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
