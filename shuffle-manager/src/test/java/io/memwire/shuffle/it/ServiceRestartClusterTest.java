package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.spark.HashPartitioner;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

/**
 * A shuffle service restarted while a reduce stage reads from it (service mode, recovery store and
 * resolve port on): the reduce tasks have read their first records and wait on a latch file while
 * the service is killed (SIGKILL) or stopped (SIGTERM) and started again; then they read the rest
 * through pointers from before the restart. Each dead pointer is re-resolved once and read
 * one-sided again: results exact, no fetch failure, no stage rerun. With the store deleted between
 * stop and start nothing is resolved: fetch failures, the map stage reruns, results still exact.
 * Fallback is off, so any block not read one-sided fails the fetch.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ServiceRestartClusterTest {
  private static final int MAPS = 6;
  private static final int REDUCERS = 4;
  private static final int RECORDS = 12_000;

  @TempDir static Path root;
  ServiceProcess service;
  LocalSparkCluster cluster;
  JavaSparkContext jsc;
  final TaskMetricsListener metrics = new TaskMetricsListener();
  final ShuffleServiceClusterTest.StageCounter stages =
      new ShuffleServiceClusterTest.StageCounter();
  int resolvePort;

  private Map<String, String> serviceConf() {
    return Map.of(
        "memwire.shuffle.service.recoveryPath", root.resolve("recovery").toString(),
        "memwire.shuffle.service.resolvePort", Integer.toString(resolvePort));
  }

  @BeforeAll
  void start() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      resolvePort = s.getLocalPort();
    }
    service = ServiceProcess.start(root.resolve("service"), serviceConf());
    Map<String, String> conf = new HashMap<>();
    conf.put(MemwireShuffleDataIO.PLUGIN_KEY, MemwireShuffleDataIO.CLASS_NAME);
    conf.put("spark.shuffle.rdma.service.socket", service.socket().toString());
    conf.put("spark.shuffle.rdma.service.resolvePort", Integer.toString(resolvePort));
    conf.put("spark.shuffle.rdma.fallback", "false"); // any block not read one-sided fails
    // One small request in flight: most blocks are read after the reducer's first record.
    conf.put("spark.reducer.maxSizeInFlight", "64k");
    conf.put("spark.reducer.maxReqsInFlight", "1");
    cluster = Clusters.start(Clusters.MANAGER, conf);
    cluster.sparkContext().addSparkListener(metrics);
    cluster.sparkContext().addSparkListener(stages);
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

  /** A record's value: 200 letters drawn from the record's own seed. */
  static String value(int i) {
    Random r = new Random(i);
    StringBuilder b = new StringBuilder(200);
    for (int k = 0; k < 200; k++) {
      b.append((char) ('a' + r.nextInt(26)));
    }
    return b.toString();
  }

  /** What one reduce partition yields: its record count and a sum over its records. */
  static long digest(int key, String value) {
    return key * 1_000_003L + value.hashCode();
  }

  /** The answer, computed here: per partition (key % REDUCERS), record count and digest sum. */
  static Map<Integer, List<Long>> expected() {
    Map<Integer, List<Long>> m = new HashMap<>();
    for (int i = 0; i < RECORDS; i++) {
      int key = i % 97;
      List<Long> v = m.computeIfAbsent(key % REDUCERS, k -> new ArrayList<>(List.of(0L, 0L)));
      v.set(0, v.get(0) + 1);
      v.set(1, v.get(1) + digest(key, value(i)));
    }
    return m;
  }

  /**
   * A shuffle whose reduce tasks, after their first record, create {@code started-<partition>} in
   * {@code latch} and wait while {@code latch/hold} exists (at most 3 minutes).
   */
  private JavaRDD<Tuple2<Integer, List<Long>>> job(Path latch) {
    String dir = latch.toString();
    List<Integer> data = IntStream.range(0, RECORDS).boxed().toList();
    return jsc.parallelize(data, MAPS)
        .mapToPair(i -> new Tuple2<>(i % 97, value(i)))
        .partitionBy(new HashPartitioner(REDUCERS))
        .mapPartitionsWithIndex(
            (Integer part, Iterator<Tuple2<Integer, String>> it) -> {
              long n = 0;
              long sum = 0;
              while (it.hasNext()) {
                Tuple2<Integer, String> t = it.next();
                if (n == 0) {
                  arriveAndWait(Path.of(dir), part);
                }
                n++;
                sum += digest(t._1(), t._2());
              }
              return List.of(new Tuple2<>(part, List.of(n, sum))).iterator();
            },
            false);
  }

  static void arriveAndWait(Path latch, int part) throws Exception {
    Files.createDirectories(latch);
    Files.writeString(
        latch.resolve("started-" + part + "-" + TaskContext.get().attemptNumber()), "");
    long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (Files.exists(latch.resolve("hold")) && System.nanoTime() < end) {
      Thread.sleep(20); // waiting on the test's condition, not on time
    }
  }

  private static long started(Path latch) {
    try (Stream<Path> s = Files.list(latch)) {
      return s.filter(p -> p.getFileName().toString().startsWith("started-")).count();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** What a restart did: the job's answer and the counters around it. */
  private record Run(Map<Integer, List<Long>> result, long reresolved, long reresolveFailures) {}

  /**
   * Runs the job; once a reduce task has read and waits, {@code restart} runs (the service goes and
   * comes back); then the tasks go on.
   */
  private Run runAcross(String name, ThrowingRunnable restart) throws Exception {
    Path latch = Files.createDirectories(root.resolve("latch-" + name));
    Files.writeString(latch.resolve("hold"), "");
    Map<String, Map<String, Long>> before = Clusters.executorStats(jsc, 2);
    stages.reset();
    metrics.reset();
    JavaRDD<Tuple2<Integer, List<Long>>> rdd = job(latch);
    CompletableFuture<List<Tuple2<Integer, List<Long>>>> result =
        CompletableFuture.supplyAsync(rdd::collect);
    Clusters.await(
        Duration.ofSeconds(120), () -> started(latch) > 0, () -> "a reduce task has read");
    restart.run();
    Files.delete(latch.resolve("hold"));
    Map<Integer, List<Long>> got = new HashMap<>();
    result.get(5, TimeUnit.MINUTES).forEach(t -> got.put(t._1(), t._2()));
    Map<String, Map<String, Long>> after = Clusters.executorStats(jsc, 2);
    return new Run(
        got,
        Clusters.sum(after, ShuffleMetrics.POINTERS_RERESOLVED)
            - Clusters.sum(before, ShuffleMetrics.POINTERS_RERESOLVED),
        Clusters.sum(after, ShuffleMetrics.RERESOLVE_FAILURES)
            - Clusters.sum(before, ShuffleMetrics.RERESOLVE_FAILURES));
  }

  interface ThrowingRunnable {
    void run() throws Exception;
  }

  private void assertReadOnOneSided(Run run) {
    assertEquals(expected(), run.result(), "exact results");
    assertEquals(0, metrics.fetchFailures.get(), "no fetch failure");
    assertEquals(0, stages.reruns.get(), "no stage rerun");
    assertTrue(run.reresolved() > 0, "dead pointers re-resolved: " + run);
    assertEquals(0, run.reresolveFailures(), run.toString());
    Map<String, Long> st = service.stats();
    assertTrue(st.get("pointersResolved") > 0, st.toString());
    assertTrue(st.get("node.servedReads") > 0, "read one-sided from the new service: " + st);
  }

  @Test
  @Order(1)
  void aServiceKilledWhileAReduceStageReadsCostsNoFetchFailure() throws Exception {
    Run run =
        runAcross(
            "kill",
            () -> {
              service.kill();
              service = ServiceProcess.start(root.resolve("service"), serviceConf());
            });
    assertReadOnOneSided(run);
  }

  @Test
  @Order(2)
  void aServiceStoppedWhileAReduceStageReadsCostsNoFetchFailure() throws Exception {
    Run run =
        runAcross(
            "term",
            () -> {
              service.close();
              service = ServiceProcess.start(root.resolve("service"), serviceConf());
            });
    assertReadOnOneSided(run);
  }

  @Test
  @Order(3)
  void withItsStoreDeletedTheMapStageRerunsAndResultsStayExact() throws Exception {
    Run run =
        runAcross(
            "lost",
            () -> {
              service.close();
              try (Stream<Path> s = Files.walk(root.resolve("recovery"))) {
                for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
                  Files.delete(p);
                }
              }
              service = ServiceProcess.start(root.resolve("service"), serviceConf());
            });
    assertEquals(expected(), run.result(), "exact results after the rerun");
    assertTrue(metrics.fetchFailures.get() > 0, "nothing to resolve: fetch failures");
    assertTrue(stages.reruns.get() > 0, "Spark reran the map stage");
    assertTrue(run.reresolveFailures() > 0, run.toString());
    assertEquals(1L, service.stats().get("recoveryStoreLost"));
  }
}
