package io.memwire.shuffle.it;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.RdmaShuffleManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

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

  /** Polls {@code condition} every 100 ms; fails with {@code what} after {@code timeout}. */
  static void await(Duration timeout, BooleanSupplier condition, Supplier<String> what)
      throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("not within " + timeout.toSeconds() + " s: " + what.get());
      }
      Thread.sleep(100);
    }
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

  /**
   * Each executor's {@link RdmaShuffleManager#stats()}, by executor id. Runs small jobs until every
   * registered executor has answered (deadline 60 s).
   */
  static Map<String, Map<String, Long>> executorStats(JavaSparkContext jsc, int executors) {
    return executorStats(jsc, seen -> seen.size() >= executors, executors);
  }

  /** The same, until each of {@code ids} has answered. */
  static Map<String, Map<String, Long>> executorStats(JavaSparkContext jsc, Set<String> ids) {
    return executorStats(jsc, seen -> seen.containsAll(ids), ids.size());
  }

  private static Map<String, Map<String, Long>> executorStats(
      JavaSparkContext jsc, Predicate<Set<String>> done, int executors) {
    Map<String, Map<String, Long>> seen = new HashMap<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!done.test(seen.keySet())) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("only executors " + seen.keySet() + " answered");
      }
      List<Tuple2<String, Map<String, Long>>> got =
          jsc.parallelize(
                  IntStream.range(0, 4 * executors).boxed().collect(Collectors.toList()),
                  4 * executors)
              .mapPartitions(
                  (Iterator<Integer> it) -> {
                    RdmaShuffleManager m = RdmaShuffleManager.current();
                    Map<String, Long> stats = m == null ? Map.of() : new HashMap<>(m.stats());
                    List<Tuple2<String, Map<String, Long>>> out = new ArrayList<>();
                    out.add(new Tuple2<>(SparkEnv.get().executorId(), stats));
                    return out.iterator();
                  })
              .collect();
      for (Tuple2<String, Map<String, Long>> t : got) {
        seen.put(t._1(), t._2());
      }
    }
    return seen;
  }

  /** Sum of one counter over executors. */
  static long sum(Map<String, Map<String, Long>> stats, String key) {
    return stats.values().stream().mapToLong(m -> m.getOrDefault(key, 0L)).sum();
  }

  /** Runs {@code task} once on every executor (same coverage rule as {@link #executorStats}). */
  static Map<String, String> onEveryExecutor(
      JavaSparkContext jsc,
      int executors,
      org.apache.spark.api.java.function.Function<String, String> task) {
    Map<String, String> seen = new HashMap<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (seen.size() < executors) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("only executors " + seen.keySet() + " answered");
      }
      List<Tuple2<String, String>> got =
          jsc.parallelize(
                  IntStream.range(0, 4 * executors).boxed().collect(Collectors.toList()),
                  4 * executors)
              .mapPartitions(
                  (Iterator<Integer> it) -> {
                    String id = SparkEnv.get().executorId();
                    List<Tuple2<String, String>> out = new ArrayList<>();
                    out.add(new Tuple2<>(id, task.call(id)));
                    return out.iterator();
                  })
              .collect();
      for (Tuple2<String, String> t : got) {
        seen.putIfAbsent(t._1(), t._2());
      }
    }
    return seen;
  }
}
