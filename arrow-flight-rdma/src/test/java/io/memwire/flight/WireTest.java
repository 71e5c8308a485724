package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.flight.wire.ClientMessage;
import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.flight.wire.WireException;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegionDescriptor;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The data-plane messages decode to what was encoded and refuse what they cannot read. */
class WireTest {
  private static final RegionDescriptor REGION =
      new RegionDescriptor(
          ProviderKind.TCP,
          new InetSocketAddress("127.0.0.1", 4000),
          0x1234_5678_9abcL,
          0x7f00_0000_0000L,
          1 << 20);

  @Test
  void batchRoundTrip() {
    byte[] header = {1, 2, 3, 4, 5};
    ServerMessage m =
        ServerMessage.batch(
            42,
            60_000,
            header,
            4096,
            List.of(REGION),
            List.of(
                new ServerMessage.BufferRef(0, 128, 0, 64),
                new ServerMessage.BufferRef(ServerMessage.NO_REGION, 0, 64, 0),
                new ServerMessage.BufferRef(0, 8192, 64, 4032)),
            "md".getBytes(StandardCharsets.UTF_8),
            new ServerMessage.Guard(0, 0x8000_0000_0000_0001L),
            0xCAFE_BABEL);
    ByteBuffer b = ByteBuffer.allocate(m.encodedSize());
    m.encode(b);
    assertFalse(b.hasRemaining(), "encodedSize is exact");
    b.flip();
    ServerMessage d = ServerMessage.decode(b);
    assertEquals(ServerMessage.BATCH, d.kind());
    assertEquals(42, d.sequence());
    assertEquals(60_000, d.leaseTimeoutMillis());
    assertArrayEquals(header, d.header());
    assertEquals(4096, d.bodyLength());
    assertEquals(List.of(REGION), d.regions());
    assertEquals(3, d.buffers().size());
    assertEquals(8192, d.buffers().get(2).regionOffset);
    assertEquals(4032, d.buffers().get(2).length);
    assertEquals(ServerMessage.NO_REGION, d.buffers().get(1).regionIndex);
    assertArrayEquals("md".getBytes(StandardCharsets.UTF_8), d.appMetadata());
    assertEquals(0, d.guard().regionIndex);
    assertEquals(0x8000_0000_0000_0001L, d.guard().generation);
    assertEquals(0xCAFE_BABEL, d.bodyChecksum());
  }

  /**
   * Version 3's fixed BATCH part: 56 bytes (no guard offset: the word is at offset 0 of its own
   * region), the checksum flag at 34 and the CRC32C at 44.
   */
  @Test
  void batchLayoutCarriesTheChecksumAndNoGuardOffset() {
    byte[] header = {9, 9, 9};
    ServerMessage with =
        ServerMessage.batch(
            5,
            1,
            header,
            8,
            List.of(REGION),
            List.of(),
            null,
            new ServerMessage.Guard(0, 77),
            0xFFFF_FFFFL);
    assertEquals(56 + 3 + RegionDescriptor.ENCODED_SIZE + 4, with.encodedSize());
    ByteBuffer b = ByteBuffer.allocate(with.encodedSize());
    with.encode(b);
    assertEquals(3, b.getShort(4), "wire version");
    assertEquals(1, b.get(34), "checksum flag");
    assertEquals(0xFFFF_FFFF, b.getInt(44));
    assertEquals(77, b.getLong(48), "generation");
    assertEquals(9, b.get(56), "IPC header follows the fixed part");
    b.flip();
    assertEquals(0xFFFF_FFFFL, ServerMessage.decode(b).bodyChecksum());

    ServerMessage without =
        ServerMessage.batch(
            5,
            1,
            header,
            8,
            List.of(REGION),
            List.of(),
            null,
            new ServerMessage.Guard(0, 77),
            ServerMessage.NO_CHECKSUM);
    ByteBuffer c = ByteBuffer.allocate(without.encodedSize());
    without.encode(c);
    assertEquals(0, c.get(34));
    assertEquals(0, c.getInt(44));
    c.flip();
    assertEquals(ServerMessage.NO_CHECKSUM, ServerMessage.decode(c).bodyChecksum());
    assertThrows(
        IllegalArgumentException.class,
        () ->
            ServerMessage.batch(5, 1, header, 8, List.of(REGION), List.of(), null, null, 1L << 32));
  }

  @Test
  void guardOutsideTheRegionListOrWithGenerationZeroIsRefused() {
    assertThrows(
        IllegalArgumentException.class,
        () ->
            ServerMessage.batch(
                1,
                1,
                new byte[0],
                8,
                List.of(REGION),
                List.of(),
                null,
                new ServerMessage.Guard(1, 5),
                ServerMessage.NO_CHECKSUM));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            ServerMessage.batch(
                1,
                1,
                new byte[0],
                8,
                List.of(REGION),
                List.of(),
                null,
                new ServerMessage.Guard(0, 0),
                ServerMessage.NO_CHECKSUM));
    ServerMessage m =
        ServerMessage.batch(
            1,
            1,
            new byte[0],
            8,
            List.of(REGION),
            List.of(),
            null,
            new ServerMessage.Guard(0, 5),
            ServerMessage.NO_CHECKSUM);
    ByteBuffer b = ByteBuffer.allocate(m.encodedSize());
    m.encode(b);
    b.putLong(48, 0); // generation 0 on the wire
    b.flip();
    WireException e = assertThrows(WireException.class, () -> ServerMessage.decode(b));
    assertTrue(e.getMessage().contains("bad lease guard"), e.getMessage());
  }

  @Test
  void endAndMetadataRoundTrip() {
    for (ServerMessage m :
        List.of(
            ServerMessage.end(7),
            ServerMessage.metadata(3, null),
            ServerMessage.metadata(3, new byte[] {9}))) {
      ByteBuffer b = ByteBuffer.allocate(m.encodedSize());
      m.encode(b);
      b.flip();
      ServerMessage d = ServerMessage.decode(b);
      assertEquals(m.kind(), d.kind());
      assertEquals(m.sequence(), d.sequence());
      assertArrayEquals(m.appMetadata(), d.appMetadata());
    }
    assertNull(ServerMessage.metadata(1, null).appMetadata());
  }

  @Test
  void bufferOutsideBodyIsRefused() {
    ServerMessage m =
        ServerMessage.batch(
            1,
            1,
            new byte[0],
            100,
            List.of(REGION),
            List.of(new ServerMessage.BufferRef(0, 0, 90, 20)),
            null,
            null,
            ServerMessage.NO_CHECKSUM);
    ByteBuffer b = ByteBuffer.allocate(m.encodedSize());
    m.encode(b);
    b.flip();
    WireException e = assertThrows(WireException.class, () -> ServerMessage.decode(b));
    assertTrue(e.getMessage().contains("out of range"), e.getMessage());
  }

  @Test
  void truncatedMessageIsRefused() {
    ServerMessage m =
        ServerMessage.batch(
            1,
            1,
            new byte[10],
            0,
            List.of(REGION),
            List.of(),
            null,
            null,
            ServerMessage.NO_CHECKSUM);
    ByteBuffer b = ByteBuffer.allocate(m.encodedSize());
    m.encode(b);
    b.flip().limit(b.limit() - 10);
    assertThrows(WireException.class, () -> ServerMessage.decode(b));
  }

  @Test
  void exchangeRequestRoundTripAndVersion() {
    ExchangeRequest r = new ExchangeRequest(ProviderKind.VERBS, 4, 1 << 20, new byte[] {7, 8});
    ExchangeRequest d = ExchangeRequest.fromBytes(r.toBytes());
    assertEquals(ProviderKind.VERBS, d.provider());
    assertEquals(4, d.windowBatches());
    assertEquals(1 << 20, d.windowBytes());
    assertArrayEquals(new byte[] {7, 8}, d.ticket());
    byte[] future = r.toBytes();
    future[5] = 9; // version 9
    WireException e = assertThrows(WireException.class, () -> ExchangeRequest.fromBytes(future));
    assertTrue(e.getMessage().contains("unsupported RDMA exchange version 9"), e.getMessage());
    assertFalse(ExchangeRequest.matches("hello".getBytes(StandardCharsets.UTF_8)));
    assertThrows(
        IllegalArgumentException.class,
        () -> new ExchangeRequest(ProviderKind.TCP, 0, 1, new byte[0]));
  }

  @Test
  void freeRoundTrip() {
    long[] seqs = {3, 1, 4, 1, 5};
    ByteBuffer b = ByteBuffer.allocate(ClientMessage.freeSize(5));
    ClientMessage.writeFree(b, seqs, 5);
    b.flip();
    assertArrayEquals(seqs, ClientMessage.readFree(b));
    assertThrows(WireException.class, () -> ClientMessage.readFree(ByteBuffer.allocate(12)));
  }
}
