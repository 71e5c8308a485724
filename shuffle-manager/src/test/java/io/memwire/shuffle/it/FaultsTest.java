package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.StaleSlots;
import io.memwire.shuffle.compat.ScalaCollections;
import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

/**
 * Failures a real cluster sees: a stale or invalid directory slot, an executor killed while
 * reducers read from it. Jobs must end with correct results through Spark's stage retry, never with
 * wrong data.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FaultsTest {
  LocalSparkCluster cluster;
  TaskMetricsListener listener;
  final IntegrityFaults.Listener integrity = new IntegrityFaults.Listener();
  JavaSparkContext jsc;

  @BeforeAll
  void start() {
    cluster =
        Clusters.start(
            Clusters.MANAGER,
            Map.of(
                // Fail fast against a dead executor: Spark's own retries would add 15 s.
                "spark.shuffle.io.maxRetries", "1",
                "spark.shuffle.io.retryWait", "1s",
                "spark.shuffle.rdma.connectTimeout", "3s"));
    listener = new TaskMetricsListener();
    cluster.sparkContext().addSparkListener(listener);
    cluster.sparkContext().addSparkListener(integrity);
    jsc = cluster.javaSparkContext();
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  static Map<Integer, Long> expectedSums(List<Integer> data, int keys) {
    Map<Integer, Long> m = new HashMap<>();
    for (int x : data) {
      m.merge(x % keys, (long) x, Long::sum);
    }
    return m;
  }

  @Test
  @Order(1)
  void providerAutoFallsBackToTcpOnEveryExecutor() {
    // startTransport: what the first shuffle task does (on Spark 3.5 the transport starts there).
    Map<String, String> desc =
        Clusters.onEveryExecutor(
            jsc,
            2,
            id -> {
              RdmaShuffleManager m = RdmaShuffleManager.current();
              m.startTransport();
              return m.transportDescription();
            });
    for (String d : desc.values()) {
      assertTrue(d.startsWith("tcp: "), desc.toString());
    }
  }

  @Test
  @Order(2)
  void staleDirectorySlotsCauseFetchFailureAndRecomputationNotWrongData() throws Exception {
    List<Integer> data = ShuffleJobs.randomInts(60_000, 11, 1_000_000);
    JavaPairRDD<Integer, Long> sums =
        jsc.parallelize(data, 6)
            .mapToPair(x -> new Tuple2<>(x % 500, (long) x))
            .reduceByKey(Long::sum, 4);
    Map<Integer, Long> expected = expectedSums(data, 500);
    assertEquals(expected, new HashMap<>(sums.collectAsMap()));

    int shuffleId =
        ((ShuffleDependency<?, ?, ?>) ScalaCollections.callSeq(sums.rdd(), "dependencies").get(0))
            .shuffleId();
    Map<String, String> changed =
        Clusters.onEveryExecutor(
            jsc, 2, id -> String.valueOf(StaleSlots.onThisExecutor(shuffleId)));
    assertEquals(
        6, changed.values().stream().mapToInt(Integer::parseInt).sum(), changed.toString());
    var before = Clusters.executorStats(jsc, 2);

    listener.reset();
    // The map stage is reused; reducers find slots naming another map id (-1) than Spark's.
    assertEquals(expected, new HashMap<>(sums.collectAsMap()));
    cluster.sparkContext().listenerBus().waitUntilEmpty(10_000);
    var after = Clusters.executorStats(jsc, 2);
    assertTrue(listener.fetchFailures.get() > 0, "expected fetch failures");
    assertTrue(
        Clusters.sum(after, ShuffleMetrics.STALE_SLOTS)
            > Clusters.sum(before, ShuffleMetrics.STALE_SLOTS),
        after.toString());
  }

  /**
   * Issue 43 with compression on (Spark's default): a corrupt data file is caught by its checksum
   * before the codec sees it, by one-sided and local reads alike; one map-stage rerun.
   */
  @Test
  @Order(3)
  @Tag(IntegrityFaults.EXTRA)
  void aCorruptCompressedDataFileGivesTheRightAnswerAfterOneMapRerun() throws Exception {
    List<Integer> data = ShuffleJobs.randomInts(60_000, 13, 1_000_000);
    JavaPairRDD<Integer, Long> sums =
        jsc.parallelize(data, 6)
            .mapToPair(x -> new Tuple2<>(x % 500, (long) x))
            .reduceByKey(Long::sum, 4);
    IntegrityFaults.corruptBetweenRuns(
        "compressed, plain fetch",
        jsc,
        integrity,
        () -> new HashMap<>(sums.collectAsMap()),
        expectedSums(data, 500),
        id -> IntegrityFaults.corruptDataFile(jsc, id));
  }

  /** The same read in batches (SQL, AQE coalescing; LZ4 frames concatenate). */
  @Test
  @Order(4)
  @Tag(IntegrityFaults.EXTRA)
  void aCorruptCompressedDataFileReadInBatchesGivesTheRightAnswerAfterOneMapRerun()
      throws Exception {
    var before = Clusters.executorStats(jsc, 2);
    var after =
        IntegrityFaults.corruptBetweenRuns(
            "compressed, batch fetch",
            jsc,
            integrity,
            new IntegrityFaults.BatchJob(cluster.session(), 120_000, 1000, 16),
            IntegrityFaults.BatchJob.expected(120_000, 1000),
            id -> IntegrityFaults.corruptDataFile(jsc, id));
    assertTrue(
        IntegrityFaults.delta(before, after, ShuffleMetrics.RDMA_BATCH_BLOCKS) > 0, "" + after);
  }

  @Test
  @Order(5)
  void executorKilledWhileReducersReadStillGivesCorrectResults(@TempDir Path dir) throws Exception {
    Map<String, String> pids =
        new HashMap<>(
            Clusters.onEveryExecutor(jsc, 2, id -> String.valueOf(ProcessHandle.current().pid())));
    List<Integer> data = ShuffleJobs.randomInts(120_000, 12, 1_000_000);
    Map<Integer, Long> expected = expectedSums(data, 3000);
    String marker = dir.resolve("killed").toString();

    listener.reset();
    List<Tuple2<Integer, Long>> out =
        jsc.parallelize(data, 8)
            .mapToPair(x -> new Tuple2<>(x % 3000, (long) x))
            .reduceByKey(Long::sum, 8)
            .mapPartitions(
                (Iterator<Tuple2<Integer, Long>> it) -> {
                  // The first reducer to get here kills the other executor, then reads.
                  if (new File(marker).createNewFile()) {
                    String me = SparkEnv.get().executorId();
                    for (Map.Entry<String, String> e : pids.entrySet()) {
                      if (!e.getKey().equals(me)) {
                        ProcessHandle.of(Long.parseLong(e.getValue()))
                            .ifPresent(ProcessHandle::destroyForcibly);
                      }
                    }
                  }
                  List<Tuple2<Integer, Long>> rows = new ArrayList<>();
                  it.forEachRemaining(rows::add);
                  return rows.iterator();
                })
            .collect();
    Map<Integer, Long> actual = new HashMap<>();
    out.forEach(t -> actual.put(t._1(), t._2()));
    assertEquals(expected, actual);
    assertTrue(new File(marker).exists());
    long alive =
        pids.values().stream()
            .filter(
                p -> ProcessHandle.of(Long.parseLong(p)).map(ProcessHandle::isAlive).orElse(false))
            .count();
    assertEquals(1, alive, "one executor JVM must have been killed: " + pids);
    assertFalse(out.isEmpty());
  }
}
