package io.memwire.verbscheck;

import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.compat.ScalaCollections;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * Leak checks of the verbs provider: many shuffles, each unregistered, leave no registrations or
 * queue pairs behind; and once the executors exited, no RDMA object of theirs is left.
 */
final class LeakChecks {
  private LeakChecks() {}

  /**
   * 50 (by default) shuffles, each unregistered with {@code ContextCleaner.doCleanupShuffle}
   * (blocking), must leave every executor's registrations and queue pairs where they were after the
   * first one by the provider's counters, and no more of them by {@code rdma resource show}.
   */
  static void leakLoop(JavaSparkContext jsc, Map<String, Long> pids, int leakRounds, CheckLog log)
      throws Exception {
    // Unregister every earlier shuffle first, so the baseline is not lowered later by the
    // ContextCleaner removing the jobs' shuffles while the loop runs (seen in the first run).
    int next = jsc.sc().newShuffleId();
    for (int id = 0; id < next; id++) {
      jsc.sc().cleaner().get().doCleanupShuffle(id, true);
    }
    smallShuffleAndUnregister(jsc, 0);
    Map<String, Map<String, Long>> s0 = ExecutorStats.byExecutor(jsc);
    Map<String, int[]> r0 = RdmaResources.byExecutor(pids);
    for (int i = 1; i <= leakRounds; i++) {
      smallShuffleAndUnregister(jsc, i);
    }
    Map<String, Map<String, Long>> s1 = ExecutorStats.byExecutor(jsc);
    Map<String, int[]> r1 = RdmaResources.byExecutor(pids);
    StringBuilder d = new StringBuilder();
    boolean ok = true;
    for (String key :
        List.of(
            ShuffleMetrics.node(TransportMetrics.VERBS_REGISTRATIONS),
            ShuffleMetrics.node(TransportMetrics.VERBS_QUEUE_PAIRS),
            ShuffleMetrics.DIRECTORY_SHUFFLES.name())) {
      Map<String, Long> a = ExecutorStats.perExecutor(s0, key);
      Map<String, Long> b = ExecutorStats.perExecutor(s1, key);
      d.append(key).append(' ').append(a).append("->").append(b).append("; ");
      ok &= a.equals(b) && !a.isEmpty();
    }
    for (String id : pids.keySet()) {
      int[] a = r0.get(id);
      int[] b = r1.get(id);
      d.append("exec ")
          .append(id)
          .append(" mr/qp/cq/pd ")
          .append(Arrays.toString(a))
          .append("->")
          .append(Arrays.toString(b))
          .append("; ");
      // The kernel may still list a queue pair (and its MR) that the provider retired before the
      // baseline and destroys during the loop: fewer is fine, any growth is a leak.
      for (int k = 0; k < a.length; k++) {
        ok &= b[k] <= a[k];
      }
    }
    log.put("verbs.leakLoop.rounds", leakRounds);
    log.verdict("verbs.leakLoop", ok, d.toString());
  }

  private static void smallShuffleAndUnregister(JavaSparkContext jsc, int round) {
    JavaPairRDD<Integer, Long> sums =
        jsc.parallelize(IntStream.range(0, 400).boxed().collect(Collectors.toList()), 2)
            .mapToPair(x -> new Tuple2<>(x % 8, (long) x + round))
            .reduceByKey(Long::sum, 2);
    long total = sums.values().reduce(Long::sum);
    long want = 400L * 399 / 2 + 400L * round;
    if (total != want) {
      throw new IllegalStateException("round " + round + ": sum " + total + ", expected " + want);
    }
    int shuffleId =
        ((ShuffleDependency<?, ?, ?>) ScalaCollections.callSeq(sums.rdd(), "dependencies").get(0))
            .shuffleId();
    jsc.sc().cleaner().get().doCleanupShuffle(shuffleId, true);
  }

  /** After the cluster closed: the executor JVMs are gone and so is every resource they held. */
  static void resourcesAfterExit(String mode, Map<String, Long> pids, CheckLog log)
      throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    for (long pid : pids.values()) {
      ProcessHandle.of(pid)
          .ifPresent(
              h -> {
                try {
                  h.onExit().get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (Exception e) {
                  throw new IllegalStateException("executor pid " + pid + " still alive", e);
                }
              });
    }
    Map<String, int[]> r = RdmaResources.byExecutor(pids);
    boolean ok = r.values().stream().allMatch(a -> Arrays.stream(a).sum() == 0);
    log.verdict(
        mode + ".resourcesAfterExit",
        ok,
        r.entrySet().stream()
            .map(e -> "exec " + e.getKey() + " mr/qp/cq/pd " + Arrays.toString(e.getValue()))
            .collect(Collectors.joining("; ")));
  }
}
