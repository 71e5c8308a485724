package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Errors keep their meaning through the wrapper: the producer's status and message reach the RDMA
 * client as a FlightRuntimeException; a data-plane failure after batches were handed out is an
 * error, not a silent retry; and stock clients are unaffected by the extra location.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@SuppressWarnings("try")
class ServerErrorTest {
  private Fixture f;

  @BeforeAll
  void start() throws Exception {
    f = new Fixture(CompressionUtil.CodecType.NO_COMPRESSION);
  }

  @AfterAll
  void stop() throws Exception {
    f.close();
  }

  @Test
  void producerErrorMidStreamReachesClient() throws Exception {
    RdmaFlightClient c = f.sharedRdmaClient();
    try (RdmaFlightStream s = c.getStream(TestProducer.ticket("fail:2:boom: disk on fire"))) {
      assertTrue(s.next());
      assertTrue(s.next());
      FlightRuntimeException ex = assertThrows(FlightRuntimeException.class, s::next);
      assertEquals(FlightStatusCode.INTERNAL, ex.status().code());
      assertTrue(ex.getMessage().contains("boom: disk on fire"), ex.getMessage());
      assertEquals(DataPlane.TCP, s.dataPlane());
      assertSame(
          ex,
          assertThrows(FlightRuntimeException.class, s::next),
          "a failed stream throws its failure again");
    }
    f.awaitServerIdle();
  }

  @Test
  void producerErrorBeforeFirstBatchIsNotRetried() throws Exception {
    RdmaFlightClient c = f.rdmaClient(f.wrappedClient(), b -> b.dataPlane(DataPlane.AUTO));
    try (RdmaFlightStream s = c.getStream(TestProducer.ticket("missing"))) {
      FlightRuntimeException ex = assertThrows(FlightRuntimeException.class, s::next);
      assertEquals(FlightStatusCode.NOT_FOUND, ex.status().code());
      assertTrue(ex.getMessage().contains("no data set named missing"), ex.getMessage());
      assertNull(FallbackReason.of(ex), "the producer's error has no data-plane reason");
      assertEquals(DataPlane.TCP, s.dataPlane(), "an application error is not a data-plane one");
    }
    f.awaitServerIdle();
  }

  @Test
  void transportFailureAfterFirstBatchIsAnError() throws Exception {
    try (Fixture own = new Fixture(CompressionUtil.CodecType.NO_COMPRESSION)) {
      RdmaFlightClient c =
          own.rdmaClient(own.wrappedClient(), b -> b.dataPlane(DataPlane.AUTO).window(1, 1L << 20));
      FlightEndpoint e =
          own.wrappedClient()
              .getInfo(FlightDescriptor.path("many:1000:20000"))
              .getEndpoints()
              .get(0);
      try (RdmaFlightStream s = c.getStream(e)) {
        assertTrue(s.next());
        own.node.close(); // the server's transport dies under the stream
        // ...possibly under a live lease: the node reports its guard and body at close, and
        // they must still be freed once the session ends (the fixture checks both)
        own.allowedLeaks.addAll(java.util.List.of(LeaseGuards.ALLOCATOR, "flight-arenas"));
        FlightRuntimeException ex =
            assertThrows(
                FlightRuntimeException.class,
                () -> {
                  for (int i = 0; i < 1000; i++) {
                    s.next();
                  }
                });
        // The client's read or the server's next registration notices first.
        assertTrue(
            java.util.Set.of(FallbackReason.TRANSPORT, FallbackReason.LEASE_FAILED)
                .contains(FallbackReason.of(ex)),
            ex.getMessage());
        assertEquals(DataPlane.TCP, s.dataPlane(), "no retry once a batch was handed out");
      }
      own.awaitServerIdle();
    }
  }

  @Test
  void stockClientTakesTheGrpcLocationFirst() throws Exception {
    FlightInfo info = f.wrappedClient().getInfo(FlightDescriptor.path("ints"));
    List<Location> locs = info.getEndpoints().get(0).getLocations();
    assertEquals(2, locs.size());
    assertEquals(f.rdmaGrpcLocation(), locs.get(0));
    assertEquals(f.rdma.rdmaLocation(), locs.get(1));
    // A stock client follows the first location and reads with DoGet, as before the wrapper.
    try (FlightClient stock = FlightClient.builder(f.clientAllocator, locs.get(0)).build();
        FlightStream got = stock.getStream(info.getEndpoints().get(0).getTicket());
        FlightStream want = f.plainClient().getStream(TestProducer.ticket("ints"))) {
      int n = 0;
      while (want.next()) {
        assertTrue(got.next());
        assertTrue(want.getRoot().equals(got.getRoot()));
        n++;
      }
      assertEquals(false, got.next());
      assertEquals(Datasets.SIZES.length, n);
    }
    assertEquals(0, f.rdma.stats().get("activeSessions"));
  }
}
