package io.memwire.shuffle.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/** The Spark metric names users see, and the values each is read from. */
class MemwireMetricsTest {
  @Test
  void theNamesUsersSeeStayTheSame() {
    List<String> causes =
        List.of(
            "encryption",
            "noDirectory",
            "providerMismatch",
            "connect",
            "read",
            "tooLarge",
            "internal");
    List<String> expected =
        new java.util.ArrayList<>(
            List.of(
                "oneSided.blocks",
                "oneSided.batchBlocks",
                "oneSided.blocksToDisk",
                "oneSided.bytes",
                "oneSided.fetchRequests"));
    for (String unit : List.of("blocks", "bytes")) {
      for (String b : ShuffleMetrics.SIZE_BUCKETS) {
        expected.add("oneSided.blockSize." + b + "." + unit);
      }
    }
    expected.add("fallback.blocks");
    causes.forEach(c -> expected.add("fallback.blocks." + c));
    expected.addAll(
        List.of(
            "failedBlocks",
            "checksum.verifiedBlocks",
            "checksum.unverifiedBlocks",
            "checksum.mismatches.network",
            "checksum.mismatches.disk",
            "outputs.published",
            "outputs.toService",
            "outputs.serviceErrors",
            "outputs.servedByFallback",
            "outputs.publishMicros",
            "outputs.migrated",
            "outputs.migratedNotRepointed",
            "metadata.reads",
            "directory.slotReads",
            "index.reads",
            "index.entryReads",
            "indexCache.hits",
            "indexCache.bytes",
            "staleSlots",
            "pointers.reresolved",
            "pointers.reresolveFailures",
            "registration.bytes",
            "registration.budget",
            "registration.regions",
            "bufferPool.bytes",
            "bufferPool.bytesLent",
            "connections.open",
            "connections.reaped",
            "reads.completed",
            "reads.bytes",
            "reads.outstanding",
            "served.reads",
            "served.bytes",
            "transport.errors.remoteAccess",
            "transport.errors.connection",
            "transport.errors.timeout",
            "transport.errors.served",
            "transport.active"));
    assertEquals(expected, MemwireMetrics.NAMES);
    assertEquals(
        expected, MemwireMetrics.ALL.stream().map(Metric::name).collect(Collectors.toList()));
  }

  @Test
  void aTransportMetricKeepsTheKindUnitAndMeaningOfItsDeclaration() {
    Metric open = byName("connections.open");
    assertEquals(TransportMetrics.OPEN_CONNECTIONS.kind(), open.kind());
    assertEquals(TransportMetrics.OPEN_CONNECTIONS.unit(), open.unit());
    assertEquals(TransportMetrics.OPEN_CONNECTIONS.doc(), open.doc());
    assertEquals(Metric.Kind.COUNTER, byName("reads.bytes").kind());
    assertEquals(Metric.Unit.BYTES, byName("reads.bytes").unit());
    assertEquals(Metric.Kind.GAUGE, byName("registration.budget").kind());
  }

  @Test
  void everyValueIsZeroWithoutAManager() {
    assertNull(RdmaShuffleManager.current());
    Map<String, Long> s = MemwireMetrics.snapshot();
    assertEquals(MemwireMetrics.NAMES, List.copyOf(s.keySet()));
    s.forEach((k, v) -> assertEquals(0L, v, k));
  }

  @Test
  void theSnapshotReadsTheManagerAndItsNode() {
    SparkSession spark =
        SparkSession.builder()
            .master("local[2]")
            .appName("memwire-metrics")
            .config("spark.ui.enabled", "false")
            .config("spark.shuffle.manager", RdmaShuffleManager.class.getName())
            .getOrCreate();
    try {
      RdmaShuffleManager manager = RdmaShuffleManager.current();
      assertNotNull(manager);
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      long keys =
          jsc.parallelize(IntStream.range(0, 1000).boxed().collect(Collectors.toList()), 4)
              .mapToPair(x -> new Tuple2<>(x % 10, 1))
              .reduceByKey(Integer::sum, 3)
              .count();
      assertEquals(10, keys);

      Map<String, Long> s = MemwireMetrics.snapshot();
      Map<String, Long> stats = manager.stats();
      assertEquals(1L, s.get("transport.active"));
      assertEquals(4L, s.get("outputs.published"));
      assertEquals(
          stats.get(ShuffleMetrics.node(TransportMetrics.REGISTERED_REGIONS)),
          s.get("registration.regions"));
      assertTrue(s.get("registration.regions") >= 8, s.toString());
      assertEquals(
          stats.get(ShuffleMetrics.node(TransportMetrics.REGISTERED_BYTES)),
          s.get("registration.bytes"));
      assertEquals(
          stats.get(ShuffleMetrics.node(TransportMetrics.POOL_SLAB_BYTES)),
          s.get("bufferPool.bytes"));
      assertEquals(
          manager.shuffleConf().transfer(null).registrationBudget(), s.get("registration.budget"));
    } finally {
      spark.stop();
    }
  }

  private static Metric byName(String name) {
    return MemwireMetrics.ALL.stream().filter(m -> m.name().equals(name)).findFirst().orElseThrow();
  }
}
