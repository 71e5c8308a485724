package io.memwire.yarnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
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
 * A NodeManager restarted with recovery on between a shuffle's map and reduce stages (issue 26,
 * item 3): the executors hand their map outputs to Memwire's aux service in a {@link
 * RestartableNodeManager}, YARN releases them, the NodeManager is stopped and a new one started
 * with the same configuration. Its aux service takes the outputs back from its recovery store
 * (under the NodeManager's recovery path) and registers them under new keys; the reduce stage, on
 * new executors, must read them one-sided through the driver's pointers from before the restart,
 * each re-resolved once on the resolve port: results equal to Spark's sort shuffle, no fetch
 * failure, no stage rerun, no fallback. Then YARN's {@code stopApplication}, delivered by the new
 * NodeManager for the application it recovered, must leave the service holding nothing.
 *
 * <p>The application master runs on the {@code MiniYARNCluster}'s own NodeManager (no aux service,
 * room for the master only), so the restarted node has no container running across the restart.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class YarnNodeManagerRestartTest {
  private static final Duration YARN_WAIT = Duration.ofSeconds(180);

  private final Path root =
      Path.of(System.getProperty("memwire.yarn.workDir", "target/yarn-it")).resolve("nm-restart");
  private Map<Integer, Long> sortShuffle;
  private MiniYARNCluster yarn;
  private RestartableNodeManager node;
  private int resolvePort;
  private JavaSparkContext jsc;
  private final ShuffleRuns runs = new ShuffleRuns();

  @BeforeAll
  void start() throws Exception {
    // A NodeManager started on a previous run's recovery directory would recover that run.
    deleteTree(root);
    sortShuffle = SumsJob.underSortShuffle();
    resolvePort = RestartableNodeManager.freePort();
    yarn = MiniYarn.startForApplicationMasters("memwire-yarn-nm-restart");
  }

  @AfterAll
  void stop() {
    if (jsc != null) {
      jsc.stop();
    }
    if (node != null) {
      node.close();
    }
    if (yarn != null) {
      yarn.stop();
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> all = Files.walk(dir)) {
      for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  /**
   * Starts the application (its master lands on the cluster's NodeManager, the only node so far),
   * then the restartable NodeManager its executors run on.
   */
  private void startApplicationAndNode() throws Exception {
    Path socket = root.resolve("node/run/memwire-shuffle.sock");
    SparkConf conf =
        SumsJob.serviceModeConf(
                "memwire-yarn-nm-restart",
                MiniYarn.sparkHadoopConf(yarn),
                root.resolve("staging"),
                socket)
            .set("spark.shuffle.rdma.service.resolvePort", Integer.toString(resolvePort))
            // No executor can start before the node below exists: do not wait for them here.
            .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "1s");
    jsc = new JavaSparkContext(conf);
    jsc.sc().addSparkListener(runs);

    node =
        RestartableNodeManager.start(
            yarn.getConfig(),
            root.resolve("node"),
            // Two executors of 512 MB heap + 384 MB overhead.
            2048,
            Path.of(System.getProperty("memwire.yarn.auxJar")),
            Map.of(
                // Ten minutes: an application gone sooner was ended by stopApplication.
                "memwire.shuffle.service.appTimeout",
                "10min",
                "memwire.shuffle.service.resolvePort",
                Integer.toString(resolvePort)));
    assertEquals(socket, node.socket());
    Waits.until(
        Duration.ofSeconds(60),
        () -> yarn.getResourceManager().getRMContext().getRMNodes().size() == 2,
        () -> "the restartable NodeManager registered with the ResourceManager");
    // The executors cannot go to the master's node: it has room for the master only.
    yarn.getResourceManager()
        .getRMContext()
        .getRMNodes()
        .forEach(
            (id, n) -> {
              if (!id.equals(node.nodeId())) {
                assertEquals(
                    MiniYarn.AM_NODE_MB,
                    n.getTotalCapability().getMemorySize(),
                    "the application master's node " + id);
              }
            });
  }

  @Test
  @Order(1)
  void aNodeManagerRestartedWithRecoveryKeepsTheMapOutputsReadableOneSided() throws Exception {
    startApplicationAndNode();
    JavaPairRDD<Integer, Long> sums = SumsJob.sums(jsc);
    assertEquals(sortShuffle, SumsJob.collect(sums), "first run equals Spark's sort shuffle");
    assertEquals(
        SumsJob.MAPS,
        node.serviceStats().get("outputsTaken"),
        "every map output went to the NodeManager's service");
    String app = jsc.sc().applicationId();
    assertTrue(
        node.knowsApplication(app), "the map executors ran on the NodeManager that is restarted");
    SparkContext sc = jsc.sc();
    Waits.until(
        YARN_WAIT,
        () -> sc.getExecutorIds().isEmpty(),
        () -> "dynamic allocation released the executors: " + sc.getExecutorIds());
    Map<String, Long> before = SumsJob.memwireTotals(jsc);

    node.restart();

    Map<String, Long> recovered = node.serviceStats();
    assertEquals(2, node.starts());
    assertTrue(node.knowsApplication(app), "the new NodeManager recovered " + app);
    assertEquals(
        (long) SumsJob.MAPS, recovered.get("outputsRecovered"), "outputs taken back: " + recovered);
    assertEquals(0L, recovered.get("recoveryStoreLost"), recovered.toString());
    assertEquals(0L, recovered.get("node.servedReads"), "a new service: " + recovered);
    runs.reset();

    // The same RDD: its map stage is done, and its pointers are from before the restart.
    assertEquals(sortShuffle, SumsJob.collect(sums), "the reduce stage after the restart");

    assertEquals(1, runs.stagesSubmitted.get(), "only the reduce stage ran: " + runs);
    assertEquals(0, runs.stageReruns.get(), runs.toString());
    assertEquals(0, runs.fetchFailures.get(), runs.toString());
    Map<String, Long> after = SumsJob.memwireTotals(jsc);
    assertTrue(SumsJob.delta(before, after, "oneSided.blocks") > 0, "read one-sided: " + after);
    assertEquals(0, SumsJob.delta(before, after, "fallback.blocks"), "no fallback: " + after);
    assertTrue(
        SumsJob.delta(before, after, "pointers.reresolved") > 0,
        "old pointers re-resolved: " + after);
    assertEquals(0, SumsJob.delta(before, after, "pointers.reresolveFailures"), after.toString());
    Map<String, Long> st = node.serviceStats();
    assertTrue(st.get("pointersResolved") > 0, "the service resolved them: " + st);
    assertTrue(st.get("node.servedReads") > 0, "the restarted service served the reads: " + st);
  }

  @Test
  @Order(2)
  void theRestartedNodeManagersStopApplicationLeavesTheServiceHoldingNothing() throws Exception {
    Map<String, Long> held = node.serviceStats();
    assertTrue(held.get("outputsHeld") > 0, "the application's outputs are held: " + held);
    Map<String, Long> st =
        SumsJob.stopAndAwaitEnded(jsc, yarn.getResourceManager(), node::serviceStats);
    jsc = null;
    assertEquals(0L, st.get("outputsHeld"), st.toString());
    assertEquals(0L, st.get("node.registeredRegions"), st.toString());
  }
}
