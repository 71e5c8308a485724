package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.compat.ScalaCollections;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Runs every {@link ShuffleJobs} job on a cluster with the RDMA manager and one configuration
 * variant, and checks for each: results equal to Spark's SortShuffleManager's, remote bytes read by
 * the RDMA client and equal to what Spark counted as remote bytes, no fallback. Ends with hygiene:
 * after every shuffle is unregistered no region, mapping or read buffer remains.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
abstract class DifferentialTestBase {
  LocalSparkCluster cluster;
  TaskMetricsListener listener;
  Map<String, List<String>> expected;

  /** Spark and manager settings of this variant. */
  abstract Map<String, String> variant();

  /** Whether this variant also runs the job with more than 2000 reduce partitions. */
  boolean large() {
    return false;
  }

  /** Whether jobs in this variant fetch blocks in batches (shuffle_s_m_a_b) at least once. */
  boolean expectBatchFetch() {
    return true;
  }

  /**
   * Whether this variant makes Spark fetch some requests to disk (maxRemoteBlockSizeFetchToMem).
   */
  boolean expectBlocksToDisk() {
    return false;
  }

  /** Whether this variant keeps peers' index files (spark.shuffle.rdma.indexCacheSize > 0). */
  boolean expectIndexCache() {
    return true;
  }

  @BeforeAll
  void startCluster() {
    expected = Reference.results();
    cluster = Clusters.start(Clusters.MANAGER, variant());
    listener = new TaskMetricsListener();
    cluster.sparkContext().addSparkListener(listener);
  }

  @AfterAll
  void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @TestFactory
  @Order(1)
  List<DynamicTest> jobsMatchSortShuffleAndReadOneSided() {
    List<DynamicTest> tests = new ArrayList<>();
    for (Map.Entry<String, Function<SparkSession, List<String>>> job :
        ShuffleJobs.all(large()).entrySet()) {
      tests.add(
          DynamicTest.dynamicTest(job.getKey(), () -> runAndCompare(job.getKey(), job.getValue())));
    }
    return tests;
  }

  private void runAndCompare(String name, Function<SparkSession, List<String>> job)
      throws Exception {
    var before = Clusters.executorStats(cluster.javaSparkContext(), 2);
    listener.reset();
    List<String> actual = job.apply(cluster.session());
    cluster.sparkContext().listenerBus().waitUntilEmpty(10_000);
    var after = Clusters.executorStats(cluster.javaSparkContext(), 2);

    assertEquals(expected.get(name), actual, name + ": results differ from SortShuffleManager's");
    Clusters.assertRemoteBytesOneSided(name, listener, before, after);
  }

  @Test
  @Order(2)
  void batchFetchWentThroughTheRdmaClient() {
    var stats = Clusters.executorStats(cluster.javaSparkContext(), 2);
    if (expectBatchFetch()) {
      assertTrue(
          Clusters.sum(stats, ShuffleMetrics.RDMA_BATCH_BLOCKS) > 0,
          "no batch block read: " + stats);
    } else {
      assertEquals(0, Clusters.sum(stats, ShuffleMetrics.RDMA_BATCH_BLOCKS), stats.toString());
    }
    assertEquals(0, Clusters.sum(stats, ShuffleMetrics.STALE_SLOTS));
    assertEquals(0, Clusters.sum(stats, ShuffleMetrics.OUTPUTS_SERVED_BY_FALLBACK));
    if (expectBlocksToDisk()) {
      assertTrue(Clusters.sum(stats, ShuffleMetrics.RDMA_BLOCKS_TO_DISK) > 0, stats.toString());
    } else {
      assertEquals(0, Clusters.sum(stats, ShuffleMetrics.RDMA_BLOCKS_TO_DISK), stats.toString());
    }
    if (expectIndexCache()) {
      // Later reduce tasks of an executor located blocks from indexes read by earlier ones.
      assertTrue(Clusters.sum(stats, ShuffleMetrics.INDEX_READS) > 0, stats.toString());
      assertTrue(Clusters.sum(stats, ShuffleMetrics.INDEX_CACHE_HITS) > 0, stats.toString());
      assertEquals(0, Clusters.sum(stats, ShuffleMetrics.INDEX_ENTRY_READS), stats.toString());
      // Slot and index entries come in one batch: at most one metadata round trip per request.
      // (With the cache off a request may also read the entries of slots it kept: two.)
      assertTrue(
          Clusters.sum(stats, ShuffleMetrics.METADATA_READS)
              <= Clusters.sum(stats, ShuffleMetrics.FETCH_REQUESTS),
          stats.toString());
    } else {
      // Entries inline in the directory come with the slot (counted as whole index reads) but
      // are not kept: a later task with the slot kept reads the block's entries.
      assertEquals(0, Clusters.sum(stats, ShuffleMetrics.INDEX_CACHE_HITS), stats.toString());
      assertTrue(Clusters.sum(stats, ShuffleMetrics.INDEX_ENTRY_READS) > 0, stats.toString());
    }
  }

  @Test
  @Order(3)
  void unregisteringEveryShuffleReleasesAllRegions() {
    var sc = cluster.sparkContext();
    // A shuffle of this test's own, held until the end: Spark's ContextCleaner may already have
    // removed the earlier tests' shuffles once their RDDs were garbage collected.
    var held =
        cluster
            .javaSparkContext()
            .parallelize(java.util.List.of(1, 2, 3, 4, 5, 6), 4)
            .mapToPair(i -> new scala.Tuple2<>(i % 3, i))
            .reduceByKey(Integer::sum, 4);
    assertEquals(3L, held.count());
    var before = Clusters.executorStats(cluster.javaSparkContext(), 2);
    assertTrue(
        Clusters.sumNode(before, TransportMetrics.REGISTERED_REGIONS) > 0, before.toString());
    int heldShuffle =
        ((org.apache.spark.ShuffleDependency<?, ?, ?>)
                ScalaCollections.callSeq(held.rdd(), "dependencies").get(0))
            .shuffleId();
    // Shuffle ids are dense from 0; remove them all (unknown ids are no-ops).
    for (int id = 0; id <= heldShuffle; id++) {
      sc.cleaner().get().doCleanupShuffle(id, true);
    }
    var after = Clusters.executorStats(cluster.javaSparkContext(), 2);
    for (var e : after.entrySet()) {
      Map<String, Long> m = e.getValue();
      assertEquals(1L, m.get(ShuffleMetrics.TRANSPORT_ACTIVE.name()), e.getKey() + " " + m);
      assertEquals(0L, m.get(ShuffleMetrics.DIRECTORY_SHUFFLES.name()), e.getKey() + " " + m);
      assertEquals(
          0L,
          m.get(ShuffleMetrics.node(TransportMetrics.REGISTERED_REGIONS)),
          e.getKey() + " " + m);
      assertEquals(
          0L, m.get(ShuffleMetrics.node(TransportMetrics.MAPPED_SEGMENTS)), e.getKey() + " " + m);
      assertEquals(
          0L, m.get(ShuffleMetrics.node(TransportMetrics.MAPPED_BYTES)), e.getKey() + " " + m);
      assertEquals(
          0L,
          m.get(ShuffleMetrics.node(TransportMetrics.POOL_BUFFERS_OUTSTANDING)),
          e.getKey() + " " + m);
      assertEquals(
          0L,
          m.get(ShuffleMetrics.node(TransportMetrics.OUTSTANDING_REQUESTS)),
          e.getKey() + " " + m);
    }
    assertTrue(held.getNumPartitions() == 4); // keeps the RDD reachable until here
  }
}
