package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.ExecutorCpu;
import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.compat.ScalaCollections;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.ExecutorDecommissionInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * Service mode on a real cluster: a Memwire shuffle service in its own JVM, a local-cluster with
 * dynamic allocation and no Spark external shuffle service. Map outputs must stay readable
 * one-sided after the executors that wrote them were released or killed, with no fetch failure and
 * no stage rerun; a service that dies makes Spark rerun the map stage, never read stale bytes; when
 * the application ends the service returns to holding nothing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ShuffleServiceClusterTest {
  private static final Duration APP_TIMEOUT = Duration.ofSeconds(3);
  private static final long LISTENER_WAIT_MS = 10_000;

  @TempDir static Path root;
  ServiceProcess service;
  LocalSparkCluster cluster;
  JavaSparkContext jsc;
  TaskMetricsListener metrics;
  final StageCounter stages = new StageCounter();
  final IntegrityFaults.Listener integrity = new IntegrityFaults.Listener();

  /** Counts stage submissions: first attempts and reruns. */
  static final class StageCounter extends SparkListener {
    final AtomicInteger submitted = new AtomicInteger();
    final AtomicInteger reruns = new AtomicInteger();

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted s) {
      submitted.incrementAndGet();
      if (s.stageInfo().attemptNumber() > 0) {
        reruns.incrementAndGet();
      }
    }

    void reset() {
      submitted.set(0);
      reruns.set(0);
    }
  }

  @BeforeAll
  void start() throws IOException {
    service =
        ServiceProcess.start(
            root.resolve("service"),
            Map.of("memwire.shuffle.service.appTimeout", APP_TIMEOUT.toMillis() + "ms"));
    Map<String, String> conf = new HashMap<>();
    conf.put(MemwireShuffleDataIO.PLUGIN_KEY, MemwireShuffleDataIO.CLASS_NAME);
    conf.put("spark.shuffle.rdma.service.socket", service.socket().toString());
    conf.put("spark.shuffle.rdma.fallback", "false"); // any block not read one-sided fails
    conf.put("spark.plugins", MemwireMetricsPlugin.class.getName());
    conf.put("spark.dynamicAllocation.shuffleTracking.enabled", "false");
    Clusters.releaseIdleExecutors(conf);
    // Released executors are decommissioned; the manager turns off shuffle migration.
    conf.put("spark.decommission.enabled", "true");
    conf.put("spark.storage.decommission.enabled", "true");
    // Idle executors may be released before both registered: the first job asks for them again.
    cluster = Clusters.start(Clusters.MANAGER, conf, 0);
    metrics = new TaskMetricsListener();
    cluster.sparkContext().addSparkListener(metrics);
    cluster.sparkContext().addSparkListener(stages);
    cluster.sparkContext().addSparkListener(integrity);
    jsc = cluster.javaSparkContext();
  }

  @AfterAll
  void stop() throws InterruptedException {
    if (cluster != null) {
      cluster.close();
    }
    if (service != null) {
      service.close();
    }
  }

  private JavaPairRDD<Integer, Long> sums(int seed) {
    return sums(seed, 5);
  }

  private JavaPairRDD<Integer, Long> sums(int seed, int reducers) {
    return KeyedSums.rdd(jsc, seed, 997, 6, reducers);
  }

  private static Map<Integer, Long> expected(int seed) {
    return KeyedSums.expected(seed, 997);
  }

  private static void await(Duration d, BooleanSupplier c, String what)
      throws InterruptedException {
    Clusters.await(d, c, () -> what);
  }

  /**
   * Collects {@code sums} with the stage and task counters reset before the job and complete after
   * it: listener events arrive after collect returns, so the bus is drained on both sides.
   */
  private Map<Integer, Long> collectCounted(JavaPairRDD<Integer, Long> sums) throws Exception {
    cluster.sparkContext().listenerBus().waitUntilEmpty(LISTENER_WAIT_MS);
    stages.reset();
    metrics.reset();
    Map<Integer, Long> result = new HashMap<>(sums.collectAsMap());
    cluster.sparkContext().listenerBus().waitUntilEmpty(LISTENER_WAIT_MS);
    return result;
  }

  /**
   * Waits until dynamic allocation has released every executor of the map stage. An executor still
   * up reads its own map outputs from its own files (local blocks never go through the service), so
   * a test that needs every read to meet the service must run its reduce stage on new executors;
   * otherwise whether any read is remote depends on which executor ran which task.
   */
  private void awaitMapExecutorsReleased() throws InterruptedException {
    await(
        Duration.ofSeconds(60),
        () -> cluster.registeredExecutors() == 0,
        "dynamic allocation released the map stage's executors");
  }

  private Map<String, Long> appTotals() throws Exception {
    MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), Duration.ofSeconds(60));
    return MemwireMetricsPlugin.applicationTotals();
  }

  @Test
  @Order(1)
  void reducersReadOneSidedFromTheServiceAfterTheMapExecutorsWereReleased() throws Exception {
    JavaPairRDD<Integer, Long> sums = sums(1);
    assertEquals(expected(1), new HashMap<>(sums.collectAsMap()));
    long taken = service.stats().get("outputsTaken");
    assertEquals(6, taken, "every map output went to the service");
    await(
        Duration.ofSeconds(60),
        () -> cluster.registeredExecutors() == 0,
        "dynamic allocation released the idle executors");
    Map<String, Long> before = appTotals();
    long servedBefore = service.stats().get("node.servedReads");
    // The same RDD again: its map stage is done, the reduce stage runs on new executors.
    assertEquals(expected(1), collectCounted(sums));

    assertEquals(1, stages.submitted.get(), "only the reduce stage ran; the map stage was kept");
    assertEquals(0, stages.reruns.get());
    assertEquals(0, metrics.fetchFailures.get());
    Map<String, Long> after = appTotals();
    long oneSided = after.get("oneSided.blocks") - before.getOrDefault("oneSided.blocks", 0L);
    assertTrue(oneSided > 0, "blocks read one-sided: " + after);
    assertEquals(
        before.getOrDefault("fallback.blocks", 0L), after.get("fallback.blocks"), "no fallback");
    assertTrue(
        service.stats().get("node.servedReads") > servedBefore,
        "the service served the reads of the second run");
    assertTrue(metrics.remoteBytesRead.get() > 0, "Spark counted remote bytes");
  }

  @Test
  @Order(2)
  void aDecommissionedExecutorsOutputsStayOneSidedWithoutMigration() throws Exception {
    assertEquals(
        "false",
        cluster.sparkContext().getConf().get("spark.storage.decommission.shuffleBlocks.enabled"),
        "service mode turned shuffle migration off");
    JavaPairRDD<Integer, Long> sums = sums(4);
    assertEquals(expected(4), new HashMap<>(sums.collectAsMap()));
    List<String> ids =
        ScalaCollections.<String>callSeq(cluster.sparkContext(), "getExecutorIds").stream()
            .toList();
    assertFalse(ids.isEmpty(), "executors of the map stage still up");
    CoarseGrainedSchedulerBackend backend =
        (CoarseGrainedSchedulerBackend) cluster.sparkContext().schedulerBackend();
    for (String id : ids) {
      backend.decommissionExecutor(
          id, new ExecutorDecommissionInfo("test decommission", Option.empty()), false, false);
    }
    await(
        Duration.ofSeconds(90),
        () ->
            ScalaCollections.<String>callSeq(cluster.sparkContext(), "getExecutorIds").stream()
                .noneMatch(ids::contains),
        "decommissioned executors " + ids + " gone");
    Map<String, Long> before = appTotals();
    assertEquals(expected(4), collectCounted(sums));
    assertEquals(1, stages.submitted.get(), "the map stage was kept");
    assertEquals(0, stages.reruns.get());
    assertEquals(0, metrics.fetchFailures.get());
    Map<String, Long> after = appTotals();
    assertTrue(
        after.get("oneSided.blocks") > before.getOrDefault("oneSided.blocks", 0L),
        "read one-sided from the service: " + after);
  }

  /**
   * Issue 43 in service mode with compression on: a data file the service holds corrupted after the
   * map stage (its link, the same inode as the executor's file) is caught by the reducers' checksum
   * check before the codec; Spark reruns the map stage once and the answer is right.
   */
  @Test
  @Order(3)
  @Tag(IntegrityFaults.EXTRA)
  void aCorruptCompressedDataFileInTheServiceGivesTheRightAnswerAfterOneMapRerun()
      throws Exception {
    JavaPairRDD<Integer, Long> sums = sums(5);
    assertEquals(expected(5), new HashMap<>(sums.collectAsMap()));
    awaitMapExecutorsReleased();
    Path outputs = root.resolve("service/outputs");
    String corrupted =
        IntegrityFaults.corruptServiceDataFile(
            outputs, IntegrityFaults.newestServiceShuffle(outputs));
    Map<String, Long> before = appTotals();
    integrity.reset();
    assertEquals(expected(5), collectCounted(sums), corrupted);
    Map<String, Long> after = appTotals();
    String state = corrupted + "; " + integrity + "; " + after;
    assertTrue(integrity.checksumFetchFailures.get() > 0, state);
    assertEquals(1, integrity.mapStageReruns.get(), state);
    assertTrue(
        after.getOrDefault("checksum.mismatches.disk", 0L)
            > before.getOrDefault("checksum.mismatches.disk", 0L),
        state);
  }

  @Test
  @Order(4)
  void anExecutorKilledAfterItsMapStageCostsNoRerun() throws Exception {
    JavaPairRDD<Integer, Long> sums = sums(2);
    assertEquals(expected(2), new HashMap<>(sums.collectAsMap()));
    // The Workers run in this JVM and launch the executors as its child processes.
    List<ProcessHandle> executors =
        ExecutorCpu.take().pids().stream().flatMap(p -> ProcessHandle.of(p).stream()).toList();
    assertFalse(executors.isEmpty(), "executors of the map stage still up");
    executors.forEach(ProcessHandle::destroyForcibly);
    await(
        Duration.ofSeconds(60),
        () -> executors.stream().noneMatch(ProcessHandle::isAlive),
        "executor JVMs gone");
    assertEquals(expected(2), collectCounted(sums));
    assertEquals(0, stages.reruns.get(), "no stage rerun after SIGKILL of the map executors");
    assertEquals(1, stages.submitted.get());
    assertEquals(0, metrics.fetchFailures.get());
  }

  @Test
  @Order(5)
  void aServiceThatDiesMakesSparkRerunTheMapStage() throws Exception {
    JavaPairRDD<Integer, Long> sums = sums(3);
    assertEquals(expected(3), new HashMap<>(sums.collectAsMap()));
    service.kill();
    service =
        ServiceProcess.start(
            root.resolve("service"),
            Map.of("memwire.shuffle.service.appTimeout", APP_TIMEOUT.toMillis() + "ms"));
    assertEquals(0L, service.stats().get("outputsHeld"), "a restarted service holds nothing");
    awaitMapExecutorsReleased();
    assertEquals(expected(3), collectCounted(sums), "exact after the rerun");
    assertTrue(metrics.fetchFailures.get() > 0, "old keys were refused: fetch failure");
    assertTrue(stages.reruns.get() > 0, "Spark reran the map stage");
    assertTrue(service.stats().get("outputsTaken") > 0, "the rerun's outputs went to the new one");
  }

  @Test
  @Order(6)
  void aKilledServiceMakesSparkRerunTheMapStage() throws Exception {
    JavaPairRDD<Integer, Long> sums = sums(5, 24);
    assertEquals(expected(5), new HashMap<>(sums.collectAsMap()));
    // Killed before the reduce stage runs again, so every read of its outputs meets the dead
    // service (killing it from a listener raced tiny reduce tasks that had already read), and
    // started again empty, with new keys: the old pointers lead nowhere.
    service.kill();
    service =
        ServiceProcess.start(
            root.resolve("service"),
            Map.of("memwire.shuffle.service.appTimeout", APP_TIMEOUT.toMillis() + "ms"));
    awaitMapExecutorsReleased();
    assertEquals(expected(5), collectCounted(sums), "exact after the rerun");
    assertTrue(metrics.fetchFailures.get() > 0, "reads from the dead service failed: " + metrics);
    assertTrue(stages.reruns.get() > 0, "Spark reran the map stage");
  }

  @Test
  @Order(7)
  void whenTheApplicationEndsTheServiceHoldsNothingWithinItsTimeout() throws Exception {
    assertEquals(expected(6), new HashMap<>(sums(6).collectAsMap()));
    assertTrue(service.stats().get("outputsHeld") > 0, "the last job's outputs are held");
    cluster.close();
    cluster = null;
    long t0 = System.nanoTime();
    await(
        APP_TIMEOUT.plus(Duration.ofSeconds(20)),
        () -> service.stats().get("applications") == 0,
        "application removed");
    Map<String, Long> st = service.stats();
    assertEquals(0L, st.get("outputsHeld"), st.toString());
    assertEquals(0L, st.get("bytesHeld"), st.toString());
    assertEquals(0L, st.get("node.registeredRegions"), st.toString());
    assertEquals(0L, st.get("directoryBytes"), st.toString());
    try (Stream<Path> files = Files.walk(root.resolve("service/outputs"))) {
      List<Path> left = files.filter(Files::isRegularFile).collect(Collectors.toList());
      assertTrue(left.isEmpty(), "files left: " + left);
    }
    long tookMs = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(tookMs >= APP_TIMEOUT.toMillis() / 2, "not before the driver went: " + tookMs);
  }
}
