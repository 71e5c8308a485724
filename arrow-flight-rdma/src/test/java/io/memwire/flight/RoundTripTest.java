package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every data set read through the RDMA data plane (tcp provider) equals the same ticket read with
 * plain DoGet from a stock client, batch by batch, with uncompressed, LZ4_FRAME and ZSTD bodies.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RoundTripTest {
  private final Map<CompressionUtil.CodecType, Fixture> fixtures =
      new java.util.EnumMap<>(CompressionUtil.CodecType.class);

  @BeforeAll
  void start() throws Exception {
    for (CompressionUtil.CodecType c :
        new CompressionUtil.CodecType[] {
          CompressionUtil.CodecType.NO_COMPRESSION,
          CompressionUtil.CodecType.LZ4_FRAME,
          CompressionUtil.CodecType.ZSTD
        }) {
      fixtures.put(c, new Fixture(c));
    }
  }

  @AfterAll
  void stop() throws Exception {
    for (Fixture f : fixtures.values()) {
      f.close();
    }
  }

  static java.util.stream.Stream<Arguments> cases() {
    return java.util.stream.Stream.of(
            CompressionUtil.CodecType.NO_COMPRESSION,
            CompressionUtil.CodecType.LZ4_FRAME,
            CompressionUtil.CodecType.ZSTD)
        .flatMap(c -> Datasets.ROUND_TRIP.stream().map(d -> Arguments.of(c, d)));
  }

  @ParameterizedTest(name = "{1} with {0}")
  @MethodSource("cases")
  void rdmaEqualsPlainDoGet(CompressionUtil.CodecType codec, String dataset) throws Exception {
    Fixture f = fixtures.get(codec);
    FlightClient plain = f.plainClient();
    FlightClient wrapped = f.wrappedClient();
    RdmaFlightClient rdma = f.sharedRdmaClient();
    FlightInfo info = wrapped.getInfo(FlightDescriptor.path(dataset));
    FlightEndpoint endpoint = info.getEndpoints().get(0);
    int batches = compare(plain.getStream(endpoint.getTicket()), rdma.getStream(endpoint));
    assertTrue(batches >= 1 || dataset.equals("empty"), "batches: " + batches);
    f.awaitServerIdle();
    assertEquals(0L, f.rdma.stats().get("leasesReleasedUnfreed"), "every lease freed by FREE");
  }

  /** Reads both streams in lockstep and asserts equal schema, batches, metadata, dictionaries. */
  static int compare(FlightStream expected, RdmaFlightStream actual) throws Exception {
    try (FlightStream e = expected;
        RdmaFlightStream a = actual) {
      assertEquals(DataPlane.TCP, a.dataPlane(), "data plane; fallback: " + a.fallbackReason());
      assertEquals(e.getSchema(), a.getSchema());
      int n = 0;
      while (true) {
        boolean more = e.next();
        assertEquals(more, a.next(), "stream lengths differ after " + n + " messages");
        if (!more) {
          break;
        }
        n++;
        assertEquals(e.getRoot().getRowCount(), a.getRoot().getRowCount(), "rows of message " + n);
        assertTrue(
            e.getRoot().equals(a.getRoot()),
            "message "
                + n
                + " differs:\nexpected "
                + e.getRoot().contentToTSVString()
                + "\nactual "
                + a.getRoot().contentToTSVString());
        assertArrayEquals(
            bytes(e.getLatestMetadata()),
            bytes(a.getLatestMetadata()),
            "app metadata of message " + n);
        compareDictionaries(e.getDictionaryProvider(), a.getDictionaryProvider());
      }
      assertFalse(a.next(), "end is sticky");
      return n;
    }
  }

  static void compareDictionaries(DictionaryProvider e, DictionaryProvider a) {
    assertEquals(e.getDictionaryIds(), a.getDictionaryIds());
    for (long id : e.getDictionaryIds()) {
      assertTrue(
          VectorEqualsVisitor.vectorEquals(e.lookup(id).getVector(), a.lookup(id).getVector()),
          "dictionary " + id);
    }
  }

  static byte[] bytes(ArrowBuf b) {
    if (b == null) {
      return null;
    }
    byte[] out = new byte[(int) b.readableBytes()];
    b.getBytes(0, out);
    return out;
  }

  @Test
  void zeroCopyProducerIsLeasedInPlace() throws Exception {
    Fixture f = fixtures.get(CompressionUtil.CodecType.NO_COMPRESSION);
    FlightClient plain = f.plainClient();
    FlightClient wrapped = f.wrappedClient();
    RdmaFlightClient rdma = f.sharedRdmaClient();
    FlightEndpoint endpoint =
        wrapped.getInfo(FlightDescriptor.path("zc:20:5000")).getEndpoints().get(0);
    long inPlaceBefore = f.rdma.stats().get("batchesInPlace");
    long copiedBefore = f.rdma.stats().get("batchesCopied");
    assertEquals(20, compare(plain.getStream(endpoint.getTicket()), rdma.getStream(endpoint)));
    assertEquals(20, f.rdma.stats().get("batchesInPlace") - inPlaceBefore);
    assertEquals(copiedBefore, f.rdma.stats().get("batchesCopied"));
    f.awaitServerIdle();
    assertEquals(0, f.zeroCopyRoot.getAllocatedMemory());
  }

  @Test
  void manyLargeBatchesAcrossStreams() throws Exception {
    Fixture f = fixtures.get(CompressionUtil.CodecType.NO_COMPRESSION);
    FlightClient plain = f.plainClient();
    FlightClient wrapped = f.wrappedClient();
    RdmaFlightClient rdma =
        f.rdmaClient(wrapped, b -> b.dataPlane(DataPlane.TCP).window(3, 4L << 20));
    FlightEndpoint endpoint =
        wrapped.getInfo(FlightDescriptor.path("many:40:150000")).getEndpoints().get(0);
    assertNotNull(endpoint);
    assertEquals(40, compare(plain.getStream(endpoint.getTicket()), rdma.getStream(endpoint)));
    f.awaitServerIdle();
  }
}
