package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import io.memwire.transfer.metrics.TransportMetrics;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * spark.network.crypto.enabled=true and nothing else: every block goes through Spark's own
 * encrypted transfer, counted as a fallback with cause encryption; no transport starts, no map
 * output is registered, and results equal Spark's sort shuffle's.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class EncryptedWireDelegatesToSparkTest extends WireEncryptionTestBase {
  @Override
  Map<String, String> variant() {
    return Map.of();
  }

  @Test
  @Order(1)
  void everyBlockGoesThroughSparksEncryptedTransfer() throws Exception {
    for (Run r : runJobs()) {
      assertEquals(
          0, r.delta(ShuffleMetrics.RDMA_BLOCKS), r.job() + ": one-sided blocks " + r.after());
      assertEquals(0, r.delta(ShuffleMetrics.RDMA_BYTES), r.job());
      assertTrue(
          r.delta(ShuffleMetrics.fallback(FallbackCause.ENCRYPTION)) > 0,
          r.job() + ": " + r.after());
      assertEquals(
          r.delta(ShuffleMetrics.FALLBACK_BLOCKS),
          r.delta(ShuffleMetrics.fallback(FallbackCause.ENCRYPTION)),
          r.job() + ": fallbacks of another cause " + r.after());
    }
    var stats = Clusters.executorStats(cluster.javaSparkContext(), 2);
    for (var e : stats.entrySet()) {
      Map<String, Long> m = e.getValue();
      assertEquals(0L, m.get(ShuffleMetrics.TRANSPORT_ACTIVE.name()), e.getKey() + " " + m);
      assertEquals(
          0L,
          m.get(ShuffleMetrics.OUTPUTS_PUBLISHED.name()),
          e.getKey() + ": map outputs registered " + m);
      assertEquals(
          0L, m.get(ShuffleMetrics.OUTPUTS_SERVED_BY_FALLBACK.name()), e.getKey() + " " + m);
      assertFalse(
          m.containsKey(ShuffleMetrics.node(TransportMetrics.REGISTERED_REGIONS)),
          e.getKey() + ": a node runs " + m);
    }
  }

  @Test
  @Order(2)
  void driverTotalsShowTheEncryptionFallbacks() throws Exception {
    var stats = Clusters.executorStats(cluster.javaSparkContext(), 2);
    Map<String, Map<String, Long>> totals =
        MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), Duration.ofSeconds(60));
    assertEquals(stats.keySet(), totals.keySet());
    for (String id : stats.keySet()) {
      assertEquals(
          stats.get(id).get(ShuffleMetrics.fallback(FallbackCause.ENCRYPTION).name()),
          totals.get(id).get("fallback.blocks.encryption"),
          id + " " + totals.get(id));
      assertEquals(0L, totals.get(id).get("oneSided.blocks"), id + " " + totals.get(id));
      assertEquals(0L, totals.get(id).get("transport.active"), id + " " + totals.get(id));
    }
    assertTrue(MemwireMetricsPlugin.applicationTotals().get("fallback.blocks.encryption") > 0);
  }
}
