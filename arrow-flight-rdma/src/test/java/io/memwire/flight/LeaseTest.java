package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.memwire.flight.wire.ServerMessage;
import java.time.Duration;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightGrpcUtils;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Leases on the server: the credit window bounds what is pinned, and cancellation, a client crash
 * or the lease timeout release everything; allocators end empty (checked by the fixture).
 */
class LeaseTest {
  /** Body of one "many:*:20000" batch: 20000 longs plus a 2504-byte validity buffer (aligned). */
  private static final long BATCH_BYTES = 160_000 + 2_504;

  private Fixture f;

  /**
   * A lease timeout no step of these tests comes near on a slow machine: only {@link
   * #leaseTimeoutEndsTheExchange} wants leases to expire, and builds its own server.
   */
  @BeforeEach
  void start() throws Exception {
    f =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION, b -> b.leaseTimeout(Duration.ofSeconds(60)));
  }

  @AfterEach
  void stop() throws Exception {
    f.close();
  }

  /** The lease's guard word as a one-sided reader sees it now. */
  private long guardWord(ServerMessage m) throws Exception {
    ServerMessage.Guard g = m.guard();
    io.memwire.transfer.RemoteRegion r =
        io.memwire.transfer.RemoteRegion.of(m.regions().get(g.regionIndex));
    io.memwire.transfer.TransferBuffer b =
        f.node
            .connection(r.node())
            .read(io.memwire.transfer.ReadRequest.of(r, 0, 8))
            .get(10, java.util.concurrent.TimeUnit.SECONDS);
    try {
      return b.nioBuffer().getLong(0);
    } finally {
      b.release();
    }
  }

  /** The lease has ended: its guard (a region of its own) can no longer be read at all. */
  private void assertGuardRevoked(ServerMessage m, String why) {
    java.util.concurrent.ExecutionException e =
        assertThrows(java.util.concurrent.ExecutionException.class, () -> guardWord(m), why);
    io.memwire.transfer.RemoteAccessException a =
        assertInstanceOf(io.memwire.transfer.RemoteAccessException.class, e.getCause(), why);
    assertEquals(io.memwire.transfer.RemoteAccessException.Reason.REGION_CLOSED, a.reason(), why);
  }

  @Test
  void batchWindowBoundsLeases() throws Exception {
    try (RawExchange x =
        new RawExchange(f.wrappedClient(), f.clientAllocator, "many:6:20000", 2, 1L << 30)) {
      ServerMessage a = x.next();
      ServerMessage b = x.next();
      assertEquals(ServerMessage.BATCH, a.kind());
      assertEquals(BATCH_BYTES, a.bodyLength());
      // The producer is now blocked on credit, with exactly the window leased.
      Fixture.await("producer waits for credit", () -> f.stat("creditWaits") >= 1);
      assertEquals(2, f.stat("leasedBatches"));
      assertEquals(2 * BATCH_BYTES, f.stat("leasedBytes"));
      // What the two leases pin in registered memory: each body rounded up to 512 bytes only
      // (162,816), not to a power of two (262,144).
      assertEquals(2 * 162_816L, f.stat("registeredBlockBytes"));
      // Each lease registers exactly its body, on the lease regions' books.
      assertEquals(2 * BATCH_BYTES, f.stat("leaseRegionBytes"));
      assertEquals(a.guard().generation, guardWord(a));
      x.free(a.sequence());
      ServerMessage c = x.next();
      assertGuardRevoked(a, "FREE revoked the guard");
      assertEquals(2, c.sequence(), "one FREE lets exactly the next batch go");
      x.free(b.sequence(), c.sequence());
      long n = 3;
      for (ServerMessage m = x.next(); m.kind() == ServerMessage.BATCH; m = x.next()) {
        x.free(m.sequence());
        n++;
      }
      assertEquals(6, n);
      x.rw.getWriter().completed();
      assertEquals(null, x.next());
    }
    f.awaitServerIdle();
    assertEquals(2 * BATCH_BYTES, f.stat("peakLeasedBytes"));
    assertEquals(0, f.stat("leasesReleasedUnfreed"));
    assertEquals(0, f.stat("leaseRegionBytes"), "completed: every lease region is off the books");
  }

  @Test
  void byteWindowBoundsPinnedBytes() throws Exception {
    // Room for two batches, not three, while the batch window (100) would let the client group
    // 25 FREEs: the client must send FREEs once the reads run dry, or this stream stalls.
    long window = 2 * BATCH_BYTES + BATCH_BYTES / 2;
    try (RdmaFlightClient client =
        RdmaFlightClient.builder(f.wrappedClient(), f.clientAllocator)
            .dataPlane(DataPlane.TCP)
            .window(100, window)
            .transferConfig(
                io.memwire.transfer.TransferConfig.builder()
                    .provider(io.memwire.transfer.ProviderKind.TCP)
                    .build())
            .registeredMemory(16L << 20, 64L << 20)
            .build()) {
      FlightEndpoint e =
          f.wrappedClient().getInfo(FlightDescriptor.path("many:40:20000")).getEndpoints().get(0);
      try (RdmaFlightStream s = client.getStream(e)) {
        int n = 0;
        while (s.next()) {
          assertEquals(20000, s.getRoot().getRowCount());
          n++;
        }
        assertEquals(40, n);
      }
    }
    f.awaitServerIdle();
    assertTrue(f.stat("peakLeasedBytes") <= window, "peak " + f.stat("peakLeasedBytes"));
    assertEquals(40, f.stat("leasesFreed"), "every lease freed by the client");
    assertTrue(f.stat("freeMessages") <= 40);
    assertTrue(f.stat("peakLeasedBytes") >= BATCH_BYTES);
  }

  @Test
  void cancelMidStreamReleasesLeases() throws Exception {
    RdmaFlightClient client =
        f.rdmaClient(f.wrappedClient(), b -> b.dataPlane(DataPlane.TCP).window(4, 1L << 30));
    FlightEndpoint e =
        f.wrappedClient().getInfo(FlightDescriptor.path("many:100000:20000")).getEndpoints().get(0);
    RdmaFlightStream s = client.getStream(e);
    assertTrue(s.next());
    assertTrue(s.next());
    s.cancel("test cancels", null);
    FlightRuntimeException ex =
        assertThrows(
            FlightRuntimeException.class,
            () -> {
              while (s.next()) {
                // drain what was already on its way
              }
            });
    assertEquals(FlightStatusCode.CANCELLED, ex.status().code());
    s.close();
    f.awaitServerIdle();
    Fixture.await("producer sees the cancellation", () -> f.producer.cancellationsSeen.get() == 1);
    assertEquals(1, f.stat("sessionsCancelled"));
    assertEquals(0, f.stat("leaseRegionBytes"), "cancelled: every lease region is off the books");
  }

  @Test
  void rawCancelReleasesUnfreedLeases() throws Exception {
    RawExchange x =
        new RawExchange(f.wrappedClient(), f.clientAllocator, "many:100:20000", 3, 1L << 30);
    ServerMessage[] sent = new ServerMessage[3];
    for (int i = 0; i < 3; i++) {
      sent[i] = x.next();
      assertEquals(ServerMessage.BATCH, sent[i].kind());
    }
    Fixture.await("three leases", () -> f.stat("leasedBatches") == 3);
    for (ServerMessage m : sent) {
      assertEquals(m.guard().generation, guardWord(m));
    }
    x.rw.getReader().cancel("raw client cancels", null);
    f.awaitServerIdle();
    for (ServerMessage m : sent) {
      // A read still in flight for these leases would now be rejected by its guard check.
      assertGuardRevoked(m, "cancel revoked the guard");
    }
    assertEquals(3, f.stat("leasesReleasedUnfreed"));
    assertEquals(0, f.stat("leaseRegionBytes"));
    x.close();
  }

  @Test
  void clientCrashReleasesLeases() throws Exception {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", f.rdmaServer.getPort()).usePlaintext().build();
    BufferAllocator alloc = f.clientAllocator.newChildAllocator("crashing", 0, Long.MAX_VALUE);
    FlightClient crashing = FlightGrpcUtils.createFlightClient(alloc, channel);
    RawExchange x = new RawExchange(crashing, alloc, "many:100:20000", 2, 1L << 30);
    ServerMessage first = x.next();
    assertNotNull(first);
    assertNotNull(x.next());
    Fixture.await("two leases", () -> f.stat("leasedBatches") == 2);
    assertEquals(first.guard().generation, guardWord(first));
    channel.shutdownNow(); // the client goes away without FREE or cancel
    assertTrue(channel.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS));
    f.awaitServerIdle();
    assertGuardRevoked(first, "crash revoked the guard");
    assertEquals(2, f.stat("leasesReleasedUnfreed"));
    assertEquals(0, f.stat("leaseRegionBytes"), "crashed: every lease region is off the books");
    x.close();
    alloc.close();
  }

  @Test
  void leaseTimeoutEndsTheExchange() throws Exception {
    try (Fixture expiring =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION,
            b -> b.leaseTimeout(Duration.ofMillis(500)))) {
      try (RawExchange x =
          new RawExchange(
              expiring.wrappedClient(), expiring.clientAllocator, "many:100:20000", 1, 1L << 30)) {
        assertEquals(ServerMessage.BATCH, x.next().kind()); // and never FREE it
        FlightRuntimeException ex = assertThrows(FlightRuntimeException.class, x::next);
        assertEquals(FlightStatusCode.TIMED_OUT, ex.status().code());
        assertTrue(ex.getMessage().contains("lease timeout"), ex.getMessage());
      }
      expiring.awaitServerIdle();
      assertTrue(expiring.stat("leasesExpired") >= 1);
      assertEquals(
          0, expiring.stat("leaseRegionBytes"), "timed out: every lease region is off the books");
    }
  }
}
