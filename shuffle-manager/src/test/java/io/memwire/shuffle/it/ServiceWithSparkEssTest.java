package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.bench.SparkShuffleServiceProcess;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Service mode where Spark's external shuffle service is deployed too: the Memwire service serves
 * the outputs of released executors one-sided, and when it is gone Spark's service is the fallback
 * (the executors' own files stay with it), so its loss costs no fetch failure and no stage rerun.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ServiceWithSparkEssTest {
  @TempDir static Path root;
  SparkShuffleServiceProcess ess;
  ServiceProcess service;
  LocalSparkCluster cluster;
  JavaSparkContext jsc;
  final TaskMetricsListener metrics = new TaskMetricsListener();
  final ShuffleServiceClusterTest.StageCounter stages =
      new ShuffleServiceClusterTest.StageCounter();

  @BeforeAll
  void start() throws IOException {
    ess = SparkShuffleServiceProcess.start(root.resolve("ess"));
    service = ServiceProcess.start(root.resolve("service"), Map.of());
    Map<String, String> conf = new HashMap<>();
    conf.put(MemwireShuffleDataIO.PLUGIN_KEY, MemwireShuffleDataIO.CLASS_NAME);
    conf.put("spark.shuffle.rdma.service.socket", service.socket().toString());
    conf.put("spark.plugins", MemwireMetricsPlugin.class.getName());
    // local-cluster turns the service off for its Master and Workers only; executors take the
    // application's settings and register with the ESS process.
    conf.put("spark.shuffle.service.enabled", "true");
    conf.put("spark.shuffle.service.port", String.valueOf(ess.port()));
    conf.put("spark.executor.cores", "1");
    Clusters.releaseIdleExecutors(conf);
    cluster = Clusters.start(Clusters.MANAGER, conf, 0);
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
    if (ess != null) {
      ess.close();
    }
  }

  private JavaPairRDD<Integer, Long> sums() {
    return KeyedSums.rdd(jsc, 5, 991, 6, 5);
  }

  private static Map<Integer, Long> expected() {
    return KeyedSums.expected(5, 991);
  }

  private void awaitReleased() throws InterruptedException {
    Clusters.await(
        Duration.ofSeconds(60),
        () -> cluster.registeredExecutors() == 0,
        () -> "dynamic allocation released the idle executors");
  }

  private Map<String, Long> totals() throws Exception {
    MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), Duration.ofSeconds(60));
    return new HashMap<>(MemwireMetricsPlugin.applicationTotals());
  }

  private static long delta(Map<String, Long> before, Map<String, Long> after, String key) {
    return after.getOrDefault(key, 0L) - before.getOrDefault(key, 0L);
  }

  @Test
  void theMemwireServiceServesFirstAndSparksServiceWhenItIsGone() throws Exception {
    JavaPairRDD<Integer, Long> sums = sums();
    assertEquals(expected(), new HashMap<>(sums.collectAsMap()));
    assertEquals(6L, service.stats().get("outputsTaken"), "every output went to the service");
    String app = cluster.sparkContext().applicationId();
    assertEquals(2, ess.registeredExecutors(app).size(), "both executors registered with the ESS");

    // Executors released: the Memwire service serves, one-sided.
    awaitReleased();
    Map<String, Long> t0 = totals();
    stages.reset();
    metrics.reset();
    assertEquals(expected(), new HashMap<>(sums.collectAsMap()));
    assertEquals(1, stages.submitted.get(), "only the reduce stage ran");
    assertEquals(0, metrics.fetchFailures.get());
    Map<String, Long> t1 = totals();
    assertTrue(delta(t0, t1, "oneSided.blocks") > 0, "one-sided from the service: " + t1);
    assertEquals(0, delta(t0, t1, "fallback.blocks"), "nothing through Spark's transfer: " + t1);

    // The Memwire service dies: the same outputs come from Spark's ESS, with no rerun.
    awaitReleased();
    long essBefore = ess.bytesServed();
    service.kill();
    stages.reset();
    metrics.reset();
    assertEquals(expected(), new HashMap<>(sums.collectAsMap()), "exact through the ESS");
    assertEquals(1, stages.submitted.get(), "only the reduce stage ran");
    assertEquals(0, stages.reruns.get());
    assertEquals(0, metrics.fetchFailures.get(), "no fetch failure");
    Map<String, Long> t2 = totals();
    assertEquals(0, delta(t1, t2, "oneSided.blocks"), t2.toString());
    assertTrue(delta(t1, t2, "fallback.blocks.connect") > 0, "fell back on connect: " + t2);
    assertTrue(
        ess.awaitBytesServed(essBefore + metrics.remoteBytesRead.get(), Duration.ofSeconds(30))
            >= essBefore + metrics.remoteBytesRead.get(),
        "Spark's ESS served the remote bytes");
  }
}
