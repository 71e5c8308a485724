package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
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
      assertEquals(0, r.delta("rdmaBlocks"), r.job() + ": one-sided blocks " + r.after());
      assertEquals(0, r.delta("rdmaBytes"), r.job());
      assertTrue(r.delta("fallbackBlocks.encryption") > 0, r.job() + ": " + r.after());
      assertEquals(
          r.delta("fallbackBlocks"),
          r.delta("fallbackBlocks.encryption"),
          r.job() + ": fallbacks of another cause " + r.after());
    }
    var stats = Clusters.executorStats(cluster.javaSparkContext(), 2);
    for (var e : stats.entrySet()) {
      Map<String, Long> m = e.getValue();
      assertEquals(0L, m.get("transportActive"), e.getKey() + " " + m);
      assertEquals(0L, m.get("outputsPublished"), e.getKey() + ": map outputs registered " + m);
      assertEquals(0L, m.get("outputsServedByFallback"), e.getKey() + " " + m);
      assertFalse(m.containsKey("node.registeredRegions"), e.getKey() + ": a node runs " + m);
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
          stats.get(id).get("fallbackBlocks.encryption"),
          totals.get(id).get("fallback.blocks.encryption"),
          id + " " + totals.get(id));
      assertEquals(0L, totals.get(id).get("oneSided.blocks"), id + " " + totals.get(id));
      assertEquals(0L, totals.get(id).get("transport.active"), id + " " + totals.get(id));
    }
    assertTrue(MemwireMetricsPlugin.applicationTotals().get("fallback.blocks.encryption") > 0);
  }
}
