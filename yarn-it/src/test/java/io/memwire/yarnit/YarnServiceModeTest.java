package io.memwire.yarnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Service mode on YARN for real: a {@link MiniYarn} NodeManager runs Memwire's auxiliary service
 * from its packaged jar, and a Spark application on YARN (client mode, Spark's own YARN support,
 * dynamic allocation, no Spark external shuffle service) hands its map outputs to it. The reduce
 * stage must read them one-sided from the NodeManager after YARN released the executors that wrote
 * them, with results equal to Spark's sort shuffle; when the application finishes, YARN's {@code
 * stopApplication} must leave the service holding nothing.
 *
 * <p>One cluster for the class; each case runs its own application ({@link #startApplication}). A
 * NodeManager restart with recovery on is {@link YarnNodeManagerRestartTest}'s case: it needs a
 * NodeManager of its own, which {@code MiniYARNCluster} cannot restart.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class YarnServiceModeTest {
  private static final Duration YARN_WAIT = Duration.ofSeconds(180);

  private final Path root = Path.of(System.getProperty("memwire.yarn.workDir", "target/yarn-it"));
  private Map<Integer, Long> sortShuffle;
  private MiniYarn yarn;
  private JavaSparkContext jsc;
  private final ShuffleRuns runs = new ShuffleRuns();

  @BeforeAll
  void start() throws Exception {
    sortShuffle = SumsJob.underSortShuffle();
    yarn =
        MiniYarn.start(
            root,
            Path.of(System.getProperty("memwire.yarn.auxJar")),
            // Ten minutes: an application gone from the service sooner was ended by YARN's
            // stopApplication, not by the driver-liveness backstop.
            Map.of("memwire.shuffle.service.appTimeout", "10min"));
  }

  @AfterAll
  void stop() {
    if (jsc != null) {
      jsc.stop();
    }
    if (yarn != null) {
      yarn.close();
    }
  }

  /**
   * Starts a Spark application on the cluster in client mode with Memwire's service mode: outputs
   * to the aux service's socket, no fallback (a block not read one-sided fails the task), executors
   * released after 3 s idle.
   */
  private void startApplication(String name) {
    SparkConf conf =
        SumsJob.serviceModeConf(
            name, yarn.sparkHadoopConf(), root.resolve("staging"), yarn.socket());
    jsc = new JavaSparkContext(conf);
    jsc.sc().addSparkListener(runs);
  }

  @Test
  @Order(1)
  void theReduceStageReadsOneSidedFromTheNodeManagerAfterTheMapExecutorsWereReleased()
      throws Exception {
    startApplication("memwire-yarn-service-mode");
    long takenBefore = yarn.serviceStats().get("outputsTaken");

    JavaPairRDD<Integer, Long> sums = SumsJob.sums(jsc);
    assertEquals(sortShuffle, SumsJob.collect(sums), "first run equals Spark's sort shuffle");

    assertEquals(
        SumsJob.MAPS,
        yarn.serviceStats().get("outputsTaken") - takenBefore,
        "every map output went to the NodeManager's service");
    SparkContext sc = jsc.sc();
    Waits.until(
        YARN_WAIT,
        () -> sc.getExecutorIds().isEmpty(),
        () -> "dynamic allocation released the executors: " + sc.getExecutorIds());
    Map<String, Long> before = SumsJob.memwireTotals(jsc);
    long servedBefore = yarn.serviceStats().get("node.servedReads");
    runs.reset();

    // The same RDD: its map stage is done and its executors are gone, so new executors run the
    // reduce stage only.
    assertEquals(sortShuffle, SumsJob.collect(sums), "the reduce stage again, on new executors");

    assertEquals(1, runs.stagesSubmitted.get(), "only the reduce stage ran: " + runs);
    assertEquals(0, runs.stageReruns.get(), runs.toString());
    assertEquals(0, runs.fetchFailures.get(), runs.toString());
    Map<String, Long> after = SumsJob.memwireTotals(jsc);
    assertTrue(SumsJob.delta(before, after, "oneSided.blocks") > 0, "read one-sided: " + after);
    assertTrue(
        SumsJob.delta(before, after, "oneSided.bytes") > 0, "bytes read one-sided: " + after);
    assertEquals(0, SumsJob.delta(before, after, "fallback.blocks"), "no fallback: " + after);
    assertTrue(
        yarn.serviceStats().get("node.servedReads") > servedBefore,
        "the NodeManager's service served the reads");
    assertTrue(runs.remoteBytesRead.get() > 0, "Spark counted remote bytes: " + runs);
  }

  @Test
  @Order(2)
  void yarnsStopApplicationLeavesTheServiceHoldingNothing() throws Exception {
    Map<String, Long> held = yarn.serviceStats();
    assertTrue(held.get("outputsHeld") > 0, "the application's outputs are held: " + held);
    Map<String, Long> st =
        SumsJob.stopAndAwaitEnded(jsc, yarn.cluster().getResourceManager(), yarn::serviceStats);
    jsc = null;
    assertEquals(0L, st.get("outputsHeld"), st.toString());
    assertEquals(0L, st.get("bytesHeld"), st.toString());
    assertEquals(0L, st.get("node.registeredRegions"), st.toString());
    assertEquals(0L, st.get("directoryBytes"), st.toString());
    assertEquals(List.of(), filesUnder(yarn.serviceDir()), "no output file left");
  }

  private static List<Path> filesUnder(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      return files.filter(Files::isRegularFile).toList();
    }
  }
}
