package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.ShuffleMetrics;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
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
import scala.Tuple2;

/**
 * Corrupt bytes on disk between the map and the reduce stage, with {@code
 * spark.shuffle.compress=false} (where Spark's sort shuffle returns a wrong answer silently): one
 * byte of every partition of one map output's data file flipped, or its checksum file's values.
 * Every reader, one-sided or local, checks the stored checksums: the job returns the right answer
 * after Spark reruns the map stage (once, or twice when fetch failures straddle its resubmit), and
 * the executors count the disk-cause mismatches. The cases share one context: plain fetch (an RDD
 * job), batch fetch (SQL with AQE coalescing: ranges of partitions per map output), fetch to disk
 * (blocks over {@link #TO_MEM}), a corrupt checksum file, and a corrupt data file of a shuffle too
 * wide for inline entries (1100 partitions: its checksums travel in each output's metadata region).
 * {@link IntegrityServiceClusterTest} runs the same in service mode; the compressed cases are in
 * {@link FaultsTest} and {@link ShuffleServiceClusterTest}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class IntegrityClusterTest {
  /** Spark's {@code maxRemoteBlockSizeFetchToMem}: the to-disk case's requests are larger. */
  static final String TO_MEM = "64k";

  LocalSparkCluster cluster;
  final IntegrityFaults.Listener listener = new IntegrityFaults.Listener();
  JavaSparkContext jsc;

  /** Settings on top of the test's (a subclass: service mode). */
  Map<String, String> extraConf() throws IOException {
    return Map.of();
  }

  /** What a subclass checks after a job (the service's counters). */
  void checkAfterJob() {}

  @BeforeAll
  void start() throws IOException {
    Map<String, String> conf = new HashMap<>(extraConf());
    conf.put("spark.shuffle.compress", "false");
    conf.put("spark.shuffle.io.maxRetries", "1");
    conf.put("spark.shuffle.io.retryWait", "1s");
    conf.put("spark.network.maxRemoteBlockSizeFetchToMem", TO_MEM);
    cluster = Clusters.start(Clusters.MANAGER, conf);
    cluster.sparkContext().addSparkListener(listener);
    jsc = cluster.javaSparkContext();
  }

  @AfterAll
  void stop() throws InterruptedException {
    if (cluster != null) {
      cluster.close();
    }
  }

  private Callable<Map<Integer, Long>> sums(List<Integer> data, int keys) {
    JavaPairRDD<Integer, Long> sums =
        jsc.parallelize(data, 6)
            .mapToPair(x -> new Tuple2<>(x % keys, (long) x))
            .reduceByKey(Long::sum, 4);
    return () -> new HashMap<>(sums.collectAsMap());
  }

  @Test
  @Order(1)
  void aCorruptDataFileBetweenStagesGivesTheRightAnswerAfterOneMapRerun() throws Exception {
    List<Integer> data = ShuffleJobs.randomInts(60_000, 21, 1_000_000);
    var before = Clusters.executorStats(jsc, 2);
    var after =
        IntegrityFaults.corruptBetweenRuns(
            "plain fetch",
            jsc,
            listener,
            sums(data, 500),
            FaultsTest.expectedSums(data, 500),
            id -> IntegrityFaults.corruptDataFile(jsc, id));
    assertTrue(
        IntegrityFaults.delta(before, after, ShuffleMetrics.CHECKSUM_VERIFIED_BLOCKS) > 0,
        "one-sided blocks verified: " + after);
    assertEquals(
        0,
        IntegrityFaults.delta(before, after, ShuffleMetrics.CHECKSUM_UNVERIFIED_BLOCKS),
        "" + after);
    checkAfterJob();
  }

  @Test
  @Order(2)
  @Tag(IntegrityFaults.EXTRA)
  void aCorruptDataFileReadInBatchesGivesTheRightAnswerAfterOneMapRerun() throws Exception {
    var before = Clusters.executorStats(jsc, 2);
    var after =
        IntegrityFaults.corruptBetweenRuns(
            "batch fetch",
            jsc,
            listener,
            new IntegrityFaults.BatchJob(cluster.session(), 120_000, 1000, 16),
            IntegrityFaults.BatchJob.expected(120_000, 1000),
            id -> IntegrityFaults.corruptDataFile(jsc, id));
    assertTrue(
        IntegrityFaults.delta(before, after, ShuffleMetrics.RDMA_BATCH_BLOCKS) > 0,
        "batch blocks read one-sided: " + after);
    assertTrue(
        IntegrityFaults.delta(before, after, ShuffleMetrics.CHECKSUM_VERIFIED_BLOCKS) > 0,
        "" + after);
  }

  @Test
  @Order(3)
  @Tag(IntegrityFaults.EXTRA)
  void aCorruptDataFileFetchedToDiskGivesTheRightAnswerAfterOneMapRerun() throws Exception {
    // 60,000 keys: blocks of thousands of records, requests over TO_MEM.
    List<Integer> data = ShuffleJobs.randomInts(240_000, 23, 1_000_000);
    var before = Clusters.executorStats(jsc, 2);
    var after =
        IntegrityFaults.corruptBetweenRuns(
            "fetch to disk",
            jsc,
            listener,
            sums(data, 60_000),
            FaultsTest.expectedSums(data, 60_000),
            id -> IntegrityFaults.corruptDataFile(jsc, id));
    assertTrue(
        IntegrityFaults.delta(before, after, ShuffleMetrics.RDMA_BLOCKS_TO_DISK) > 0,
        "blocks fetched to disk: " + after);
  }

  @Test
  @Order(4)
  void aCorruptChecksumFileIsADiskCauseAndGivesTheRightAnswer() throws Exception {
    // One-sided readers check against the values taken when the map ended; a read of the changed
    // file (Spark's local read on the writer) finds its bytes disagree with it: cause disk.
    List<Integer> data = ShuffleJobs.randomInts(60_000, 25, 1_000_000);
    IntegrityFaults.corruptBetweenRuns(
        "corrupt checksum file",
        jsc,
        listener,
        sums(data, 500),
        FaultsTest.expectedSums(data, 500),
        id -> IntegrityFaults.corruptChecksumFile(jsc, id));
  }

  @Test
  @Order(5)
  void aShuffleOver1023PartitionsIsVerifiedAndACorruptDataFileGivesTheRightAnswer()
      throws Exception {
    // Too wide for inline entries: each output's slot names a metadata region holding its index
    // entries and checksums (MWS4), so one-sided reads are verified as for a narrow shuffle.
    var before = Clusters.executorStats(jsc, 2);
    var after =
        IntegrityFaults.corruptBetweenRuns(
            "wide shuffle",
            jsc,
            listener,
            new IntegrityFaults.BatchJob(cluster.session(), 60_000, 2000, 1100),
            IntegrityFaults.BatchJob.expected(60_000, 2000),
            id -> IntegrityFaults.corruptDataFile(jsc, id));
    assertTrue(
        IntegrityFaults.delta(before, after, ShuffleMetrics.CHECKSUM_VERIFIED_BLOCKS) > 0,
        "" + after);
    assertEquals(
        0,
        IntegrityFaults.delta(before, after, ShuffleMetrics.CHECKSUM_UNVERIFIED_BLOCKS),
        "" + after);
    checkAfterJob();
  }
}
