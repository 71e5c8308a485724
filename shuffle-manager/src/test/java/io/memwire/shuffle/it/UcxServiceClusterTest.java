package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import io.memwire.shuffle.service.ServiceSettings;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.ucx.UcxProviderFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.api.java.JavaPairRDD;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Service mode over the ucx provider (UCX's shared-memory transports): the shuffle service's node
 * and the executors all run ucx; once dynamic allocation has released the map stage's executors,
 * the reduce stage reads every remote block one-sided from the service, with the right answer and
 * no fallback. Skips (with the reason) without UCX.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class UcxServiceClusterTest {
  // Shared memory (the executors and the service share this host); UcxDifferentialTest runs the
  // executors' jobs over UCX's tcp.
  private static final Map<String, String> UCX =
      Map.of("provider", "ucx", "ucxTransports", "posix,sysv,cma");

  @TempDir static Path root;
  ServiceProcess service;
  LocalSparkCluster cluster;
  final ShuffleServiceClusterTest.StageCounter stages =
      new ShuffleServiceClusterTest.StageCounter();
  TaskMetricsListener metrics;

  @BeforeAll
  void start() throws IOException {
    Optional<String> why =
        new UcxProviderFactory()
            .unavailableReason(TransferConfig.builder().provider(ProviderKind.UCX).build());
    Assumptions.assumeTrue(why.isEmpty(), () -> "ucx not available: " + why.orElse(""));
    Map<String, String> serviceConf = new HashMap<>();
    serviceConf.put("memwire.shuffle.service.appTimeout", "3000ms");
    UCX.forEach((k, v) -> serviceConf.put(ServiceSettings.TRANSFER_PREFIX + k, v));
    // The service's JVM inherits UCX_ERROR_SIGNALS= from this one (set by the build).
    service = ServiceProcess.start(root.resolve("service"), serviceConf);
    Map<String, String> conf = new HashMap<>();
    conf.put(MemwireShuffleDataIO.PLUGIN_KEY, MemwireShuffleDataIO.CLASS_NAME);
    conf.put("spark.shuffle.rdma.service.socket", service.socket().toString());
    conf.put("spark.shuffle.rdma.fallback", "false"); // any block not read one-sided fails
    conf.put("spark.plugins", MemwireMetricsPlugin.class.getName());
    conf.put("spark.dynamicAllocation.shuffleTracking.enabled", "false");
    conf.put("spark.executorEnv.UCX_ERROR_SIGNALS", "");
    UCX.forEach((k, v) -> conf.put("spark.shuffle.rdma." + k, v));
    Clusters.releaseIdleExecutors(conf);
    cluster = Clusters.start(Clusters.MANAGER, conf, 0);
    metrics = new TaskMetricsListener();
    cluster.sparkContext().addSparkListener(metrics);
    cluster.sparkContext().addSparkListener(stages);
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

  @Test
  void reducersReadOverUcxFromTheServiceAfterTheMapExecutorsWereReleased() throws Exception {
    JavaPairRDD<Integer, Long> sums = KeyedSums.rdd(cluster.javaSparkContext(), 11, 997, 6, 5);
    Map<Integer, Long> expected = KeyedSums.expected(11, 997);
    assertEquals(expected, new HashMap<>(sums.collectAsMap()));
    assertEquals(6, service.stats().get("outputsTaken"), "every map output went to the service");
    String serviceLog = Files.readString(root.resolve("service/service-1.log"));
    assertTrue(serviceLog.contains("ucx provider on"), "the service's node runs ucx");
    Clusters.await(
        Duration.ofSeconds(60),
        () -> cluster.registeredExecutors() == 0,
        () -> "dynamic allocation released the map stage's executors");
    MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), Duration.ofSeconds(60));
    Map<String, Long> before = MemwireMetricsPlugin.applicationTotals();
    cluster.sparkContext().listenerBus().waitUntilEmpty(10_000);
    stages.reset();
    metrics.reset();

    // The same RDD again: its map stage is kept, the reduce stage runs on new executors, whose
    // every block lives only in the service.
    assertEquals(expected, new HashMap<>(sums.collectAsMap()));
    cluster.sparkContext().listenerBus().waitUntilEmpty(10_000);

    assertEquals(1, stages.submitted.get(), "only the reduce stage ran");
    assertEquals(0, stages.reruns.get());
    assertEquals(0, metrics.fetchFailures.get());
    MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), Duration.ofSeconds(60));
    Map<String, Long> after = MemwireMetricsPlugin.applicationTotals();
    long oneSided = after.get("oneSided.blocks") - before.getOrDefault("oneSided.blocks", 0L);
    assertTrue(oneSided > 0, "blocks read one-sided from the service: " + after);
    assertEquals(
        before.getOrDefault("fallback.blocks", 0L), after.get("fallback.blocks"), "no fallback");
    assertTrue(metrics.remoteBytesRead.get() > 0, "Spark counted remote bytes");
  }
}
