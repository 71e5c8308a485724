package io.memwire.shuffle.metrics;

import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.Function;
import scala.Tuple2;

/**
 * Runs a small task on every executor of an application and collects one answer per executor. Spark
 * cannot aim a task at an executor, so this runs small jobs of a few tasks per executor until each
 * wanted executor has answered or the deadline passes. A task may run more than once on an
 * executor; the last answer of each is kept.
 */
public final class EveryExecutor {
  /** Tasks per expected executor in each job: enough that the scheduler reaches all of them. */
  private static final int TASKS_PER_EXECUTOR = 4;

  private EveryExecutor() {}

  /**
   * {@code task}'s answer on at least {@code executors} executors, by executor id ({@code task}
   * gets the id of the executor it runs on).
   *
   * @throws IllegalStateException naming the executors that answered when {@code timeout} passes
   *     first
   */
  public static <T> Map<String, T> run(
      JavaSparkContext jsc, int executors, Duration timeout, Function<String, T> task) {
    return run(jsc, seen -> seen.size() >= executors, executors, timeout, task);
  }

  /** The same, until each executor of {@code ids} has answered (others may answer too). */
  public static <T> Map<String, T> run(
      JavaSparkContext jsc, Set<String> ids, Duration timeout, Function<String, T> task) {
    return run(jsc, seen -> seen.containsAll(ids), ids.size(), timeout, task);
  }

  /** The executors registered with {@code jsc}'s driver now (at least 1; the driver excluded). */
  public static int registered(JavaSparkContext jsc) {
    return Math.max(1, jsc.sc().statusTracker().getExecutorInfos().length - 1);
  }

  private static <T> Map<String, T> run(
      JavaSparkContext jsc,
      Predicate<Set<String>> done,
      int executors,
      Duration timeout,
      Function<String, T> task) {
    Map<String, T> seen = new TreeMap<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    int tasks = TASKS_PER_EXECUTOR * Math.max(1, executors);
    List<Integer> slots = IntStream.range(0, tasks).boxed().collect(Collectors.toList());
    while (!done.test(seen.keySet())) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "only executors " + seen.keySet() + " answered within " + timeout);
      }
      List<Tuple2<String, T>> got =
          jsc.parallelize(slots, tasks)
              .mapPartitions(
                  (Iterator<Integer> ignored) -> {
                    String id = SparkEnv.get().executorId();
                    return List.of(new Tuple2<>(id, task.call(id))).iterator();
                  })
              .collect();
      for (Tuple2<String, T> t : got) {
        seen.put(t._1(), t._2());
      }
    }
    return seen;
  }
}
