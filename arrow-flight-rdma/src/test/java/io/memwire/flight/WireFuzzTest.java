package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.flight.wire.ClientMessage;
import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.flight.wire.WireException;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegionDescriptor;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Fuzzing of the data-plane decoders (server messages, FREE, exchange request) with random bytes
 * and with mutations of valid messages: every input decodes or fails with {@link WireException},
 * never another exception, and a decode allocates no more than about the input's own size, so
 * counts in a message cannot make its reader allocate gigabytes. The seed is fixed; {@code -Pfuzz}
 * runs many more tries ({@code jqwik.tries.default}).
 */
class WireFuzzTest {
  private static final String SEED = "20261201";

  /** Allowance above the input's size for the decoder's own objects. */
  private static final long SLACK = 64 * 1024;

  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** Runs a decoder: it returns or throws WireException, and allocates little. */
  private static void decodes(byte[] input, Consumer<byte[]> decoder) {
    // Once unmeasured: a first run links call sites (string concatenation, exception classes),
    // which allocates once per JVM, not per message.
    try {
      decoder.accept(input);
    } catch (WireException expected) {
      // typed refusal
    }
    long tid = Thread.currentThread().getId();
    long before = THREADS.getThreadAllocatedBytes(tid);
    try {
      decoder.accept(input);
    } catch (WireException expected) {
      // typed refusal
    }
    long allocated = THREADS.getThreadAllocatedBytes(tid) - before;
    assertTrue(
        allocated <= 4L * input.length + SLACK,
        "decoding " + input.length + " bytes allocated " + allocated);
  }

  private static void server(byte[] b) {
    ServerMessage.decode(ByteBuffer.wrap(b));
  }

  private static void free(byte[] b) {
    ClientMessage.readFree(ByteBuffer.wrap(b));
  }

  private static void request(byte[] b) {
    ExchangeRequest.fromBytes(b);
  }

  private static byte[] encode(ServerMessage m) {
    ByteBuffer b = ByteBuffer.allocate(m.encodedSize());
    m.encode(b);
    return b.array();
  }

  // ---- valid messages to mutate ------------------------------------------------------------

  @Provide
  Arbitrary<byte[]> validServerMessages() {
    Arbitrary<ServerMessage> batch =
        Combinators.combine(
                Arbitraries.longs().greaterOrEqual(0),
                Arbitraries.bytes().array(byte[].class).ofMaxSize(64),
                Arbitraries.integers().between(1, 4),
                Arbitraries.integers().between(0, 6),
                Arbitraries.bytes().array(byte[].class).ofMaxSize(16))
            .as(
                (seq, header, regions, buffers, md) -> {
                  List<RegionDescriptor> rs = new ArrayList<>();
                  for (int i = 0; i < regions; i++) {
                    rs.add(
                        new RegionDescriptor(
                            ProviderKind.TCP,
                            new InetSocketAddress("127.0.0.1", 4000 + i),
                            seq + i,
                            4096L * i,
                            4096));
                  }
                  List<ServerMessage.BufferRef> bs = new ArrayList<>();
                  for (int i = 0; i < buffers; i++) {
                    bs.add(new ServerMessage.BufferRef(i % regions, 64L * i, 64L * i, 64));
                  }
                  return ServerMessage.batch(
                      seq,
                      1000,
                      header,
                      64L * buffers,
                      rs,
                      bs,
                      md.length == 0 ? null : md,
                      new ServerMessage.Guard(0, seq | 1),
                      (seq & 1) == 0 ? ServerMessage.NO_CHECKSUM : seq & 0xFFFF_FFFFL);
                });
    Arbitrary<ServerMessage> meta =
        Arbitraries.bytes()
            .array(byte[].class)
            .ofMinSize(1)
            .ofMaxSize(32)
            .map(md -> ServerMessage.metadata(1, md));
    Arbitrary<ServerMessage> end = Arbitraries.longs().greaterOrEqual(0).map(ServerMessage::end);
    return Arbitraries.oneOf(batch, meta, end).map(WireFuzzTest::encode);
  }

  @Provide
  Arbitrary<byte[]> validFrees() {
    return Arbitraries.longs()
        .array(long[].class)
        .ofMaxSize(20)
        .map(
            seqs -> {
              ByteBuffer b = ByteBuffer.allocate(ClientMessage.freeSize(seqs.length));
              ClientMessage.writeFree(b, seqs, seqs.length);
              return b.array();
            });
  }

  @Provide
  Arbitrary<byte[]> validRequests() {
    return Combinators.combine(
            Arbitraries.integers().between(1, 1000),
            Arbitraries.longs().between(1, 1L << 40),
            Arbitraries.bytes().array(byte[].class).ofMaxSize(64))
        .as((w, b, t) -> new ExchangeRequest(ProviderKind.TCP, w, b, t).toBytes());
  }

  /**
   * A mutation of a valid message: overwrite a 1, 2, 4 or 8-byte field with a value (often an
   * extreme count), flip a byte, or truncate.
   */
  private static byte[] mutate(byte[] valid, int kind, int at, long value) {
    byte[] b = valid.clone();
    if (b.length == 0) {
      return b;
    }
    int pos = Math.floorMod(at, b.length);
    ByteBuffer w = ByteBuffer.wrap(b).order(ByteOrder.BIG_ENDIAN);
    switch (kind) {
      case 0:
        b[pos] = (byte) value;
        break;
      case 1:
        if (pos + 2 <= b.length) {
          w.putShort(pos, (short) value);
        }
        break;
      case 2:
        if (pos + 4 <= b.length) {
          w.putInt(pos, (int) value);
        }
        break;
      case 3:
        if (pos + 8 <= b.length) {
          w.putLong(pos, value);
        }
        break;
      default:
        return java.util.Arrays.copyOf(b, pos);
    }
    return b;
  }

  @Provide
  Arbitrary<Long> fieldValues() {
    return Arbitraries.oneOf(
        Arbitraries.longs(),
        Arbitraries.of(
            0L,
            -1L,
            1L,
            0xFFFFL,
            0x7FFFFFFFL,
            0xFFFFFFFFL,
            Long.MAX_VALUE,
            Long.MIN_VALUE,
            1L << 31,
            1L << 20,
            48L,
            32L));
  }

  // ---- properties ----------------------------------------------------------------------------

  @Property(seed = SEED)
  void randomBytesNeverBreakTheServerMessageDecoder(@ForAll @Size(max = 300) byte[] b) {
    decodes(b, WireFuzzTest::server);
  }

  @Property(seed = SEED)
  void randomBytesWithTheMagicNeverBreakTheServerMessageDecoder(
      @ForAll @Size(max = 300) byte[] tail, @ForAll @IntRange(min = 1, max = 3) int kind) {
    // Magic, version and kind right, so the decoder reaches the counts.
    ByteBuffer b = ByteBuffer.allocate(8 + tail.length).order(ByteOrder.BIG_ENDIAN);
    b.putInt(0x4D574653).putShort(ExchangeRequest.VERSION).put((byte) kind).put((byte) 0).put(tail);
    decodes(b.array(), WireFuzzTest::server);
  }

  @Property(seed = SEED)
  void mutatedServerMessagesDecodeOrFailTyped(
      @ForAll("validServerMessages") byte[] valid,
      @ForAll @IntRange(min = 0, max = 4) int kind,
      @ForAll int at,
      @ForAll("fieldValues") long value) {
    decodes(mutate(valid, kind, at, value), WireFuzzTest::server);
  }

  @Property(seed = SEED)
  void mutatedFreesDecodeOrFailTyped(
      @ForAll("validFrees") byte[] valid,
      @ForAll @IntRange(min = 0, max = 4) int kind,
      @ForAll int at,
      @ForAll("fieldValues") long value) {
    decodes(mutate(valid, kind, at, value), WireFuzzTest::free);
  }

  @Property(seed = SEED)
  void mutatedRequestsDecodeOrFailTyped(
      @ForAll("validRequests") byte[] valid,
      @ForAll @IntRange(min = 0, max = 4) int kind,
      @ForAll int at,
      @ForAll("fieldValues") long value) {
    decodes(mutate(valid, kind, at, value), WireFuzzTest::request);
  }

  @Property(seed = SEED)
  void randomBytesNeverBreakFreeAndRequestDecoders(@ForAll @Size(max = 200) byte[] b) {
    decodes(b, WireFuzzTest::free);
    decodes(b, WireFuzzTest::request);
  }

  // ---- the counts the issue names --------------------------------------------------------

  /**
   * A BATCH of 64 bytes announcing {@code h} header bytes, {@code r} regions, {@code n} buffers.
   */
  private static byte[] batchAnnouncing(int h, int r, int n) {
    ByteBuffer b = ByteBuffer.allocate(64 + 4).order(ByteOrder.BIG_ENDIAN);
    b.putInt(0x4D574653)
        .putShort(ExchangeRequest.VERSION)
        .put(ServerMessage.BATCH)
        .put((byte) 0)
        .putLong(0);
    b.putInt(1000).putInt(h).putLong(0).putShort((short) r).putShort((short) 0).putInt(n);
    b.putShort((short) ServerMessage.NO_REGION).putShort((short) 0).putInt(0).putLong(0).putLong(0);
    return b.array();
  }

  @net.jqwik.api.Example
  void hugeCountsInASmallMessageAreRefusedBeforeAllocating() {
    for (byte[] m :
        List.of(
            batchAnnouncing(Integer.MAX_VALUE - 16, 0, 0),
            batchAnnouncing(256 << 20, 0, 0),
            batchAnnouncing(0, 0xFFFE, 0),
            batchAnnouncing(0, 0, Integer.MAX_VALUE),
            batchAnnouncing(0, 0, 1 << 24))) {
      WireException e = assertThrows(WireException.class, () -> server(m));
      assertTrue(
          e.getMessage().contains("follow") || e.getMessage().contains("corrupt"), e.getMessage());
      decodes(m, WireFuzzTest::server);
    }
  }
}
