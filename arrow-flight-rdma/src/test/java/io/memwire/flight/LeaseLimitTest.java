package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.flight.wire.ServerMessage;
import io.memwire.transfer.memory.MemoryAllocator;
import java.time.Duration;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The limit on what live leases register ({@code maxRegisteredBytes}) lives in the producer's
 * {@value LeaseBodies#ALLOCATOR} allocator: a lease past it fails as a whole with a typed error
 * naming the setting, and the books return to zero once the leases end.
 */
class LeaseLimitTest {
  private static final long LIMIT = 1L << 20;

  /** What one lease of a 20000-row BIGINT batch registers: its validity and data bytes. */
  private static final long LEASE_BYTES = 2_500 + 160_000;

  private Fixture f;

  @BeforeEach
  void start() throws Exception {
    f =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION,
            b -> b.registeredMemory(LIMIT, LIMIT).leaseTimeout(Duration.ofSeconds(30)));
  }

  @AfterEach
  void stop() throws Exception {
    f.close(); // also: the allocator closed with zero bytes outstanding
  }

  @Test
  void leaseRegionsAreBookedOnTheProducersChildWithItsLimit() {
    MemoryAllocator books = f.resources.leaseRegions();
    assertEquals(LeaseBodies.ALLOCATOR, books.name());
    assertEquals(f.node.memory(), books.parent());
    assertEquals(LIMIT, books.limit());
  }

  @Test
  void leasePastTheLimitFailsAsAWholeAndTheBooksEmpty() throws Exception {
    // The same in-place batch leased again and again: each lease registers its own regions, so
    // the seventh would take the books past 1 MiB (6 * 162,500 fit, 7 do not).
    int fit = (int) (LIMIT / LEASE_BYTES);
    assertEquals(6, fit);
    try (RawExchange x =
        new RawExchange(f.wrappedClient(), f.clientAllocator, "zcsame:10:20000", 10, 1L << 30)) {
      long[] seqs = new long[fit];
      for (int i = 0; i < fit; i++) {
        ServerMessage m = x.next();
        assertEquals(ServerMessage.BATCH, m.kind());
        seqs[i] = m.sequence();
      }
      Fixture.await("the next lease fails", () -> f.stat("leasesFailed") == 1);
      // All or nothing: the failed lease left none of its regions on the books (or the node's).
      assertEquals(fit * LEASE_BYTES, f.stat("leaseRegionBytes"));
      assertEquals(fit * LEASE_BYTES, f.resources.leaseRegions().registeredBytes());
      // The sent batches stay leased until read; then the exchange ends with the lease's error.
      x.free(seqs);
      FlightRuntimeException ex = assertThrows(FlightRuntimeException.class, x::next);
      assertEquals(FlightStatusCode.UNAVAILABLE, ex.status().code(), ex.getMessage());
      assertEquals(FallbackReason.LEASE_FAILED, FallbackReason.of(ex), ex.getMessage());
      assertTrue(
          ex.getMessage().contains("memwire.flight.server.maxRegisteredBytes=" + LIMIT),
          ex.getMessage());
    }
    f.awaitServerIdle();
    assertEquals(0, f.stat("leaseRegionBytes"));
    assertEquals(fit, f.stat("batchesInPlace"));
    assertEquals(fit, f.stat("leasesFreed"));
  }

  @Test
  void leasesWithinTheLimitServeTheWholeStream() throws Exception {
    // FREEing as it reads, one client never holds more than its window: 20 leases of the same
    // bytes go through a 1 MiB limit.
    RdmaFlightClient c =
        f.rdmaClient(f.wrappedClient(), b -> b.dataPlane(DataPlane.TCP).window(4, 1L << 30));
    try (RdmaFlightStream s = c.getStream(TestProducer.ticket("zcsame:20:20000"))) {
      int n = 0;
      while (s.next()) {
        assertEquals(20000, s.getRoot().getRowCount());
        assertEquals(
            TestProducer.value(0, 5),
            ((org.apache.arrow.vector.BigIntVector) s.getRoot().getVector(0)).get(5));
        n++;
      }
      assertEquals(20, n);
    }
    f.awaitServerIdle();
    assertEquals(0, f.stat("leasesFailed"));
    assertEquals(0, f.stat("leaseRegionBytes"));
  }
}
