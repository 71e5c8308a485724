package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.compat.ScalaCollections;
import io.memwire.shuffle.directory.DirectoryPointer;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.ExecutorDecommissionInfo;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import scala.Option;

/**
 * Spark's decommissioning with shuffle migration on (no shuffle service): the outputs of a
 * decommissioned executor are copied to the others, and there they must be published again, so that
 * their new locations carry a Memwire pointer and the next reduce stage reads them one-sided
 * ({@code fallback=false}: a block without a pointer would fail), with no fetch failure and no
 * rerun.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DecommissionMigrationTest {
  private static final int MAPS = 9;

  LocalSparkCluster cluster;
  JavaSparkContext jsc;
  final TaskMetricsListener metrics = new TaskMetricsListener();
  final ShuffleServiceClusterTest.StageCounter stages =
      new ShuffleServiceClusterTest.StageCounter();

  @BeforeAll
  void start() {
    cluster =
        LocalSparkCluster.builder()
            .executors(3)
            .coresPerExecutor(1)
            .memoryPerExecutorMb(768)
            .appName("memwire-decommission-test")
            .startupTimeout(Duration.ofSeconds(120))
            .conf("spark.shuffle.manager", Clusters.MANAGER)
            .conf("spark.shuffle.readHostLocalDisk", "false")
            .conf("spark.shuffle.rdma.fallback", "false")
            .conf("spark.decommission.enabled", "true")
            .conf("spark.storage.decommission.enabled", "true")
            .conf("spark.storage.decommission.shuffleBlocks.enabled", "true")
            .conf("spark.storage.decommission.rddBlocks.enabled", "false")
            .conf(Clusters.QUICK_FETCH_RETRIES)
            .start();
    cluster.sparkContext().addSparkListener(metrics);
    cluster.sparkContext().addSparkListener(stages);
    jsc = cluster.javaSparkContext();
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private JavaPairRDD<Integer, Long> sums() {
    return KeyedSums.rdd(jsc, 3, 1009, MAPS, 6);
  }

  private static Map<Integer, Long> expected() {
    return KeyedSums.expected(3, 1009);
  }

  private static MapStatus[] statuses(int shuffleId) {
    MapOutputTrackerMaster tracker = (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
    return tracker.shuffleStatuses().get(shuffleId).get().mapStatuses().clone();
  }

  private static String executorOf(MapStatus s) {
    return s == null ? null : s.location().executorId();
  }

  private static boolean hasPointer(MapStatus s) {
    Option<String> topology = s.location().topologyInfo();
    return topology.isDefined() && DirectoryPointer.fromTopologyInfo(topology.get()).isPresent();
  }

  @Test
  void migratedOutputsGetAPointerAndAreReadOneSided() throws Exception {
    JavaPairRDD<Integer, Long> sums = sums();
    assertEquals(expected(), new HashMap<>(sums.collectAsMap()));
    int shuffleId =
        ((ShuffleDependency<?, ?, ?>) ScalaCollections.callSeq(sums.rdd(), "dependencies").get(0))
            .shuffleId();
    MapStatus[] before = statuses(shuffleId);
    Map<String, Integer> outputsBy = new HashMap<>();
    for (MapStatus s : before) {
      assertTrue(hasPointer(s), "published by the map task: " + s.location());
      outputsBy.merge(executorOf(s), 1, Integer::sum);
    }
    // The executor with the most outputs goes; the other two receive its outputs.
    String leaving =
        outputsBy.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
    int migrating = outputsBy.get(leaving);
    Set<String> stay = new TreeSet<>(outputsBy.keySet());
    stay.remove(leaving);

    CoarseGrainedSchedulerBackend backend =
        (CoarseGrainedSchedulerBackend) cluster.sparkContext().schedulerBackend();
    backend.decommissionExecutor(
        leaving, new ExecutorDecommissionInfo("test decommission", Option.empty()), false, false);
    Clusters.await(
        Duration.ofSeconds(120),
        () -> {
          for (MapStatus s : statuses(shuffleId)) {
            if (s == null || leaving.equals(executorOf(s)) || !hasPointer(s)) {
              return false;
            }
          }
          return true;
        },
        () -> "every output of " + leaving + " migrated and re-pointed: " + describe(shuffleId));
    Clusters.await(
        Duration.ofSeconds(120),
        () ->
            !ScalaCollections.<String>callSeq(cluster.sparkContext(), "getExecutorIds")
                .contains(leaving),
        () -> "decommissioned executor " + leaving + " gone");

    MapStatus[] after = statuses(shuffleId);
    for (int i = 0; i < after.length; i++) {
      assertEquals(before[i].mapId(), after[i].mapId(), "map " + i + " kept its output");
      if (leaving.equals(executorOf(before[i]))) {
        assertFalse(leaving.equals(executorOf(after[i])), "map " + i + " moved");
      } else {
        assertEquals(before[i].location(), after[i].location(), "map " + i + " stayed");
      }
    }
    // Standalone may start a replacement executor: the counters that matter are those of the two.
    Map<String, Map<String, Long>> stats = Clusters.executorStats(jsc, stay);
    stats.keySet().retainAll(stay);
    assertEquals(
        migrating,
        Clusters.sum(stats, ShuffleMetrics.OUTPUTS_MIGRATED),
        "received, re-pointed: " + stats);
    assertEquals(0, Clusters.sum(stats, ShuffleMetrics.MIGRATED_NOT_REPOINTED), stats.toString());
    long oneSidedBefore = Clusters.sum(stats, ShuffleMetrics.RDMA_BLOCKS);
    metrics.reset();
    stages.reset();
    assertEquals(expected(), new HashMap<>(sums.collectAsMap()), "answers after the migration");
    assertEquals(1, stages.submitted.get(), "only the reduce stage ran: outputs were kept");
    assertEquals(0, stages.reruns.get());
    assertEquals(0, metrics.fetchFailures.get());
    assertTrue(metrics.remoteBytesRead.get() > 0, "Spark counted remote bytes");
    Set<String> live =
        new TreeSet<>(ScalaCollections.<String>callSeq(cluster.sparkContext(), "getExecutorIds"));
    Map<String, Map<String, Long>> later = Clusters.executorStats(jsc, live);
    assertTrue(Clusters.sum(later, ShuffleMetrics.RDMA_BLOCKS) > oneSidedBefore, later.toString());
    assertEquals(0, Clusters.sum(later, ShuffleMetrics.FALLBACK_BLOCKS), later.toString());
    assertEquals(0, Clusters.sum(later, ShuffleMetrics.FAILED_BLOCKS), later.toString());
  }

  private static String describe(int shuffleId) {
    StringBuilder sb = new StringBuilder();
    for (MapStatus s : statuses(shuffleId)) {
      sb.append(s == null ? "lost" : executorOf(s) + (hasPointer(s) ? "+p" : "")).append(' ');
    }
    return sb.toString();
  }
}
