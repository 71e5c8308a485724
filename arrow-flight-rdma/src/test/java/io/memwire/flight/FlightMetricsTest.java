package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.memwire.flight.metrics.FlightMetrics;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.Test;

class FlightMetricsTest {
  @SuppressWarnings("unchecked")
  private static long gauge(MetricRegistry r, String name) {
    Gauge<Long> g = (Gauge<Long>) r.getGauges().get(name);
    assertTrue(g != null, "no gauge " + name + " in " + r.getNames());
    return g.getValue();
  }

  /** A real exchange moves the server's and the node's gauges; closing removes them all. */
  @Test
  void serverAndNodeCountersReachTheRegistryAndLeaveIt() throws Exception {
    MetricRegistry registry = new MetricRegistry();
    try (Fixture f = new Fixture(CompressionUtil.CodecType.NO_COMPRESSION)) {
      // refresh 0: every read takes a snapshot, so the test needs no waiting
      FlightMetrics.Registration server =
          FlightMetrics.register(registry, "mw.server", f.rdma::stats, 0);
      FlightMetrics.Registration node = FlightMetrics.register(registry, "mw.node", f.node);
      RdmaFlightClient rdma = f.sharedRdmaClient();
      FlightMetrics.Registration client =
          FlightMetrics.register(registry, "mw.client", rdma::stats, 0);
      assertEquals(0, gauge(registry, "mw.server.bodyBytes"));
      FlightEndpoint endpoint =
          f.wrappedClient().getInfo(FlightDescriptor.path("ints")).getEndpoints().get(0);
      int batches = 0;
      try (RdmaFlightStream s = rdma.getStream(endpoint)) {
        while (s.next()) {
          batches++;
        }
      }
      f.awaitServerIdle();
      assertTrue(batches > 0);
      assertTrue(gauge(registry, "mw.server.bodyBytes") > 0);
      long copied = gauge(registry, "mw.server.batchesCopied"); // batches with a body
      assertTrue(copied > 0 && copied <= batches, copied + " of " + batches);
      assertEquals(1, gauge(registry, "mw.server.sessionsStarted"));
      assertTrue(registry.getNames().stream().anyMatch(n -> n.startsWith("mw.node.")));
      assertEquals(1, gauge(registry, "mw.client.streamsOneSided"));
      assertEquals(batches, gauge(registry, "mw.client.batchesOneSided"));
      assertEquals(
          gauge(registry, "mw.server.bodyBytes"), gauge(registry, "mw.client.bodyBytesOneSided"));
      assertEquals(0, gauge(registry, "mw.client.fallbacks"));
      client.close();
      server.close();
      node.close();
      assertTrue(registry.getNames().isEmpty(), registry.getNames().toString());
    }
  }

  @Test
  void oneSnapshotPerRefreshAndNoHalfRegistration() {
    MetricRegistry registry = new MetricRegistry();
    AtomicInteger snapshots = new AtomicInteger();
    Map<String, Long> counters = new HashMap<>(Map.of("a", 1L, "b", 2L));
    FlightMetrics.Registration r =
        FlightMetrics.register(
            registry,
            "p",
            () -> {
              snapshots.incrementAndGet();
              return counters;
            },
            60_000);
    assertEquals(1, snapshots.get());
    counters.put("a", 5L);
    assertEquals(1, gauge(registry, "p.a")); // within the refresh interval: the same snapshot
    assertEquals(2, gauge(registry, "p.b"));
    assertEquals(1, snapshots.get());
    FlightMetrics.Registration fresh = FlightMetrics.register(registry, "q", () -> counters, 0);
    assertEquals(5, gauge(registry, "q.a"));
    // A clash on the second name must not leave the first registered.
    registry.register("z.b", (Gauge<Long>) () -> 0L);
    assertThrows(
        IllegalArgumentException.class,
        () -> FlightMetrics.register(registry, "z", () -> counters, 0));
    assertTrue(registry.getNames().stream().noneMatch(n -> n.equals("z.a")));
    r.close();
    fresh.close();
    assertEquals(java.util.Set.of("z.b"), registry.getNames());
    assertThrows(
        IllegalArgumentException.class,
        () -> FlightMetrics.register(registry, " ", () -> counters, 0));
  }
}
