package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.flight.wire.ServerMessage;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A second Flight client that attacks the data plane with the ordinary transfer API: it takes the
 * remote key of a region its own batch names and reads other addresses with it (another client's
 * live lease, the memory around its own lease), re-reads a lease it has freed, and reads everything
 * its key reaches after a freed block was reused. Each lease must expose its own bytes only, only
 * while it lives.
 */
class LeaseIsolationTest {
  private Fixture f;
  private TransferNode attacker;

  @BeforeEach
  void start() throws Exception {
    f =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION, b -> b.leaseTimeout(Duration.ofSeconds(30)));
    attacker = TransferNode.start(TransferConfig.builder().provider(ProviderKind.TCP).build());
  }

  @AfterEach
  void stop() throws Exception {
    attacker.close();
    f.close();
  }

  /** Reads {@code [address, +length)} with the key of {@code d}: a forged descriptor. */
  private byte[] read(RegionDescriptor d, long address, int length) throws Exception {
    RemoteRegion r =
        RemoteRegion.of(new RegionDescriptor(d.provider(), d.node(), d.key(), address, length));
    TransferBuffer b =
        attacker.connection(d.node()).read(ReadRequest.of(r, 0, length)).get(10, TimeUnit.SECONDS);
    try {
      byte[] out = new byte[length];
      b.nioBuffer().duplicate().get(out);
      return out;
    } finally {
      b.release();
    }
  }

  private RemoteAccessException refused(RegionDescriptor d, long address, int length, String what) {
    ExecutionException e =
        assertThrows(
            ExecutionException.class, () -> read(d, address, length), what + " must be refused");
    return assertInstanceOf(RemoteAccessException.class, e.getCause(), what);
  }

  /** The batch's largest buffer (the BIGINT values). */
  private static ServerMessage.BufferRef values(ServerMessage m) {
    ServerMessage.BufferRef big = null;
    for (ServerMessage.BufferRef r : m.buffers()) {
      if (big == null || r.length > big.length) {
        big = r;
      }
    }
    return big;
  }

  private static long address(ServerMessage m, ServerMessage.BufferRef r) {
    return m.regions().get(r.regionIndex).address() + r.regionOffset;
  }

  private static long longAt(byte[] b, int off) {
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong(off);
  }

  @ParameterizedTest
  @ValueSource(strings = {"many", "zc"}) // copied into blocks, leased in place
  void aSecondClientCannotReadAnotherClientsLeaseNorTheArenaAroundItsOwn(String kind)
      throws Exception {
    try (RawExchange victim =
            new RawExchange(f.wrappedClient(), f.clientAllocator, kind + ":3:20000", 1, 1L << 30);
        RawExchange thief =
            new RawExchange(
                f.client(f.rdmaGrpcLocation()), f.clientAllocator, kind + ":1:100", 1, 1L << 30)) {
      ServerMessage v = victim.next();
      ServerMessage t = thief.next();
      assertEquals(ServerMessage.BATCH, v.kind());
      assertEquals(ServerMessage.BATCH, t.kind());
      ServerMessage.BufferRef vb = values(v);
      RegionDescriptor vd = v.regions().get(vb.regionIndex);
      // The owner reads its lease: the bytes are there and readable with its own key.
      byte[] own = read(vd, address(v, vb), (int) vb.length);
      assertEquals(TestProducer.value(0, 1), longAt(own, 8));

      for (RegionDescriptor td : t.regions()) {
        assertNotEquals(vd.key(), td.key(), "leases of two clients share a key");
        RemoteAccessException e =
            refused(
                td, address(v, vb), (int) vb.length, "the victim's values with the thief's key");
        assertEquals(RemoteAccessException.Reason.OUT_OF_BOUNDS, e.reason(), e.getMessage());
        ServerMessage.Guard g = v.guard();
        refused(
            td,
            v.regions().get(g.regionIndex).address(),
            8,
            "the victim's guard word with the thief's key");
        // Around its own region: the bytes just before and just after it.
        refused(td, td.address() - 512, 512, "512 bytes before the thief's region");
        refused(td, td.address() + td.length(), 4096, "4 KiB after the thief's region");
      }
      // Its own bytes it does read.
      ServerMessage.BufferRef tb = values(t);
      byte[] mine = read(t.regions().get(tb.regionIndex), address(t, tb), (int) tb.length);
      assertEquals(TestProducer.value(0, 99), longAt(mine, 8 * 99));
      thief.free(t.sequence());
      victim.free(v.sequence());
    }
    f.awaitServerIdle();
  }

  @Test
  void aFreedLeaseIsNeverReadableAgain() throws Exception {
    try (RawExchange x =
        new RawExchange(f.wrappedClient(), f.clientAllocator, "many:2:20000", 1, 1L << 30)) {
      ServerMessage m = x.next();
      ServerMessage.BufferRef vb = values(m);
      RegionDescriptor d = m.regions().get(vb.regionIndex);
      assertEquals(TestProducer.value(0, 1), longAt(read(d, address(m, vb), (int) vb.length), 8));
      x.free(m.sequence());
      // With a window of one, batch 1 is sent only once batch 0's lease has ended.
      ServerMessage next = x.next();
      assertEquals(1, next.sequence());
      RemoteAccessException e =
          refused(d, address(m, vb), (int) vb.length, "a re-read of the freed lease");
      assertEquals(RemoteAccessException.Reason.REGION_CLOSED, e.reason(), e.getMessage());
      refused(
          m.regions().get(m.guard().regionIndex),
          m.regions().get(m.guard().regionIndex).address(),
          8,
          "the freed lease's guard");
      x.free(next.sequence());
      assertEquals(ServerMessage.END, x.next().kind());
      x.rw.getWriter().completed();
      assertEquals(null, x.next());
    }
    f.awaitServerIdle();
  }

  @Test
  void aReusedBlockNeverShowsTheOldBatchesBytes() throws Exception {
    long victimBody;
    long victimAddress;
    try (RawExchange victim =
        new RawExchange(f.wrappedClient(), f.clientAllocator, "many:1:20000", 1, 1L << 30)) {
      ServerMessage v = victim.next();
      victimBody = v.bodyLength();
      victimAddress = v.regions().get(0).address();
      victim.free(v.sequence());
      assertEquals(ServerMessage.END, victim.next().kind());
      victim.rw.getWriter().completed();
      assertEquals(null, victim.next());
    }
    f.awaitServerIdle();
    try (RawExchange thief =
        new RawExchange(
            f.client(f.rdmaGrpcLocation()), f.clientAllocator, "many:1:100", 1, 1L << 30)) {
      ServerMessage t = thief.next();
      ServerMessage.BufferRef tb = values(t);
      RegionDescriptor body = t.regions().get(tb.regionIndex);
      assertEquals(victimAddress, body.address(), "the freed block holds the new batch");
      assertTrue(t.bodyLength() < victimBody);
      long reachable = 0;
      for (RegionDescriptor d : t.regions()) {
        reachable += d.length();
        for (long off = 0; off < d.length(); off += 1 << 20) {
          int n = (int) Math.min(1 << 20, d.length() - off);
          byte[] b = read(d, d.address() + off, n);
          for (int i = 0; i + 8 <= n; i += 8) {
            long x = longAt(b, i);
            assertTrue(
                x < 100 || x >= 20_000,
                "an old batch's value "
                    + x
                    + " at offset "
                    + (off + i)
                    + " of a region the thief may read");
          }
        }
      }
      // What the key reaches: this batch's body and its 8-byte guard, nothing else.
      assertEquals(t.bodyLength() + LeaseGuards.SLOT_BYTES, reachable);
      // Padding between the buffers is zero, not left over from the old batch.
      byte[] whole = read(body, body.address(), (int) body.length());
      boolean[] covered = new boolean[whole.length];
      for (ServerMessage.BufferRef r : t.buffers()) {
        for (long i = 0; i < r.length; i++) {
          covered[(int) (r.regionOffset + i)] = true;
        }
      }
      for (int i = 0; i < whole.length; i++) {
        if (!covered[i]) {
          assertEquals(0, whole[i], "padding byte " + i + " of the body");
        }
      }
      thief.free(t.sequence());
    }
    f.awaitServerIdle();
  }
}
