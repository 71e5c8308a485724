package io.memwire.yarnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
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
import scala.Tuple2;

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
  private static final int RECORDS = 40_000;
  private static final int KEYS = 997;
  private static final int MAPS = 6;
  private static final int REDUCERS = 4;
  private static final Duration YARN_WAIT = Duration.ofSeconds(180);

  private final Path root = Path.of(System.getProperty("memwire.yarn.workDir", "target/yarn-it"));
  private Map<Integer, Long> sortShuffle;
  private MiniYarn yarn;
  private JavaSparkContext jsc;
  private final ShuffleRuns runs = new ShuffleRuns();

  @BeforeAll
  void start() throws Exception {
    sortShuffle = sumsUnderSortShuffle();
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

  /** The job: values {@code i * 7} summed by {@code value % KEYS}, MAPS maps, REDUCERS reducers. */
  private static JavaPairRDD<Integer, Long> sums(JavaSparkContext sc) {
    List<Integer> data = IntStream.range(0, RECORDS).map(i -> i * 7).boxed().toList();
    return sc.parallelize(data, MAPS)
        .mapToPair(x -> new Tuple2<>(x % KEYS, (long) x))
        .reduceByKey(Long::sum, REDUCERS);
  }

  private static Map<Integer, Long> collect(JavaPairRDD<Integer, Long> rdd) {
    return new HashMap<>(rdd.collectAsMap());
  }

  /** The job under Spark's own SortShuffleManager, in a local driver of this JVM. */
  private static Map<Integer, Long> sumsUnderSortShuffle() {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("sort-shuffle-reference")
            .set("spark.shuffle.manager", "sort")
            .set("spark.ui.enabled", "false");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      return collect(sums(sc));
    }
  }

  /**
   * Starts a Spark application on the cluster in client mode with Memwire's service mode: outputs
   * to the aux service's socket, no fallback (a block not read one-sided fails the task), executors
   * released after 3 s idle.
   */
  private void startApplication(String name) {
    SparkConf conf = SparkOnYarn.clientMode(name, yarn.sparkHadoopConf(), root.resolve("staging"));
    conf.set("spark.shuffle.manager", "io.memwire.shuffle.RdmaShuffleManager")
        .set("spark.shuffle.sort.io.plugin.class", "io.memwire.shuffle.dataio.MemwireShuffleDataIO")
        .set("spark.shuffle.rdma.service.socket", yarn.socket().toString())
        .set("spark.shuffle.rdma.provider", "tcp")
        .set("spark.shuffle.rdma.fallback", "false")
        .set("spark.plugins", MemwireMetricsPlugin.class.getName())
        .set("spark.executor.extraJavaOptions", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED")
        .set("spark.dynamicAllocation.enabled", "true")
        .set("spark.dynamicAllocation.shuffleTracking.enabled", "false")
        .set("spark.dynamicAllocation.executorIdleTimeout", "3s")
        .set("spark.dynamicAllocation.schedulerBacklogTimeout", "1s")
        .set("spark.dynamicAllocation.minExecutors", "0")
        .set("spark.dynamicAllocation.initialExecutors", "2")
        .set("spark.dynamicAllocation.maxExecutors", "2");
    jsc = new JavaSparkContext(conf);
    jsc.sc().addSparkListener(runs);
  }

  private Map<String, Long> memwireTotals() throws Exception {
    MemwireMetricsPlugin.awaitExecutorTotals(jsc.sc(), Duration.ofSeconds(60));
    return MemwireMetricsPlugin.applicationTotals();
  }

  private static long delta(Map<String, Long> before, Map<String, Long> after, String key) {
    return after.getOrDefault(key, 0L) - before.getOrDefault(key, 0L);
  }

  @Test
  @Order(1)
  void theReduceStageReadsOneSidedFromTheNodeManagerAfterTheMapExecutorsWereReleased()
      throws Exception {
    startApplication("memwire-yarn-service-mode");
    long takenBefore = yarn.serviceStats().get("outputsTaken");

    JavaPairRDD<Integer, Long> sums = sums(jsc);
    assertEquals(sortShuffle, collect(sums), "first run equals Spark's sort shuffle");

    assertEquals(
        MAPS,
        yarn.serviceStats().get("outputsTaken") - takenBefore,
        "every map output went to the NodeManager's service");
    SparkContext sc = jsc.sc();
    Waits.until(
        YARN_WAIT,
        () -> sc.getExecutorIds().isEmpty(),
        () -> "dynamic allocation released the executors: " + sc.getExecutorIds());
    Map<String, Long> before = memwireTotals();
    long servedBefore = yarn.serviceStats().get("node.servedReads");
    runs.reset();

    // The same RDD: its map stage is done and its executors are gone, so new executors run the
    // reduce stage only.
    assertEquals(sortShuffle, collect(sums), "the reduce stage again, on new executors");

    assertEquals(1, runs.stagesSubmitted.get(), "only the reduce stage ran: " + runs);
    assertEquals(0, runs.stageReruns.get(), runs.toString());
    assertEquals(0, runs.fetchFailures.get(), runs.toString());
    Map<String, Long> after = memwireTotals();
    assertTrue(delta(before, after, "oneSided.blocks") > 0, "read one-sided: " + after);
    assertTrue(delta(before, after, "oneSided.bytes") > 0, "bytes read one-sided: " + after);
    assertEquals(0, delta(before, after, "fallback.blocks"), "no fallback: " + after);
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
    ApplicationId app = ApplicationId.fromString(jsc.sc().applicationId());

    jsc.stop();
    jsc = null;

    Waits.until(
        YARN_WAIT,
        () ->
            yarn.cluster().getResourceManager().getRMContext().getRMApps().get(app).getState()
                == RMAppState.FINISHED,
        () -> app + " finished in YARN");
    Waits.until(
        Duration.ofSeconds(60),
        () -> yarn.serviceStats().get("applications") == 0,
        () -> "the service ended " + app + " on stopApplication: " + yarn.serviceStats());
    Map<String, Long> st = yarn.serviceStats();
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
