package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.flight.wire.ServerMessage;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A read racing the end of its lease: the client's reads of batch 1 are held back until the server
 * has expired that lease and leased the same registered memory to another exchange's batch. The
 * reads must not return the other batch's bytes (the lease's region is closed), and the client must
 * not hand out anything.
 */
class LeaseRaceTest {
  private Fixture f;

  @BeforeEach
  void start() throws Exception {
    f =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION, b -> b.leaseTimeout(Duration.ofMillis(3000)));
  }

  @AfterEach
  void stop() throws Exception {
    f.close();
  }

  /** The region key and address of the batch's value buffer (its largest one). */
  private static long[] valueBuffer(ServerMessage m) {
    ServerMessage.BufferRef big = null;
    for (ServerMessage.BufferRef r : m.buffers()) {
      if (big == null || r.length > big.length) {
        big = r;
      }
    }
    io.memwire.transfer.RegionDescriptor d = m.regions().get(big.regionIndex);
    return new long[] {d.key(), d.address() + big.regionOffset, big.length};
  }

  @Test
  void readRacingLeaseExpiryNeverHandsOutAnotherBatchesBytes() throws Exception {
    AtomicReference<ServerMessage> held = new AtomicReference<>();
    CountDownLatch heldBack = new CountDownLatch(1);
    CountDownLatch go = new CountDownLatch(1);
    RdmaFlightClient client =
        f.rdmaClient(
            f.wrappedClient(),
            b -> {
              b.dataPlane(DataPlane.TCP).window(1, 1L << 30);
              b.beforeReads =
                  m -> {
                    if (m.sequence() == 1) {
                      held.set(m);
                      heldBack.countDown();
                      if (!go.await(20, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("test never released the reads");
                      }
                    }
                  };
            });
    FlightEndpoint e =
        f.wrappedClient().getInfo(FlightDescriptor.path("many:3:20000")).getEndpoints().get(0);
    try (RdmaFlightStream s = client.getStream(e)) {
      assertTrue(s.next());
      assertEquals(TestProducer.value(0, 0), ((BigIntVector) s.getRoot().getVector(0)).get(0));

      // Batch 1's descriptor is here, its reads are held back; the server expires its lease.
      assertTrue(heldBack.await(10, TimeUnit.SECONDS), "batch 1 descriptor");
      Fixture.await(
          "lease of batch 1 expired and freed",
          () ->
              f.stat("leasesExpired") >= 1
                  && f.stat("activeSessions") == 0
                  && f.stat("registeredBlocks") == 0);

      // Another exchange now leases the same memory with its own batch 0.
      try (RawExchange other =
          new RawExchange(f.wrappedClient(), f.clientAllocator, "many:1:20000", 1, 1L << 30)) {
        ServerMessage reuse = other.next();
        assertEquals(ServerMessage.BATCH, reuse.kind());
        long[] stale = valueBuffer(held.get());
        long[] fresh = valueBuffer(reuse);
        assertEquals(stale[1], fresh[1], "the freed block is reused at the same address");
        assertNotEquals(stale[0], fresh[0], "each lease is a region with its own key");

        go.countDown(); // the stale reads go out now: to a closed region, not the other batch
        FlightRuntimeException ex =
            assertThrows(
                FlightRuntimeException.class,
                () -> {
                  while (s.next()) {
                    // a batch handed out here would carry batch 0 of the other exchange
                    BigIntVector v = (BigIntVector) s.getRoot().getVector(0);
                    assertEquals(TestProducer.value(1, 0), v.get(0), "wrong bytes handed out");
                  }
                });
        assertTrue(
            ex.getMessage().contains("lease") || ex.getMessage().contains("TIMED_OUT"),
            ex.getMessage());
        assertEquals(
            1, client.clientStats().staleBatchesRejected.sum(), "the guard caught the stale read");
      }
    }
    f.awaitServerIdle();
  }
}
