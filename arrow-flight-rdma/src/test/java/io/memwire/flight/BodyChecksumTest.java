package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The body checksum: a byte flipped in a lease's registered memory after the server took the body's
 * CRC32C fails the client's stream, naming the batch and both values, and the batch is never handed
 * out; with the checksum off the client checks nothing.
 */
class BodyChecksumTest {
  private static final Pattern MISMATCH =
      Pattern.compile(
          "body of batch (\\d+) \\((\\d+) bytes\\) failed its checksum: expected CRC32C"
              + " ([0-9a-f]{8}), found ([0-9a-f]{8})");

  /** Flips the first byte of the last buffer of the third leased body. */
  private static LeaseBodies.Tap corruptThird(AtomicInteger leases) {
    return views -> {
      if (leases.incrementAndGet() == 3) {
        ByteBuffer last = views.get(views.size() - 1);
        last.put(0, (byte) (last.get(0) ^ 0x5A));
      }
    };
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"many", "zc"})
  void aBodyChangedAfterItsChecksumFailsTheStream(String producer) throws Exception {
    AtomicInteger leases = new AtomicInteger();
    try (Fixture f =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION,
            b -> {
              b.bodyChecksum(true);
              b.bodyTap = corruptThird(leases);
            })) {
      RdmaFlightClient rdma = f.sharedRdmaClient();
      String name = producer + ":6:1000";
      FlightEndpoint endpoint =
          f.wrappedClient().getInfo(FlightDescriptor.path(name)).getEndpoints().get(0);
      int handedOut = 0;
      FlightRuntimeException e;
      try (RdmaFlightStream s = rdma.getStream(endpoint)) {
        e =
            assertThrows(
                FlightRuntimeException.class,
                () -> {
                  while (s.next()) {
                    // counted below through the client's counters
                  }
                });
        handedOut = (int) rdma.stats().get("batchesOneSided").longValue();
      }
      assertEquals(FlightStatusCode.INTERNAL, e.status().code(), e.toString());
      assertNull(FallbackReason.of(e), "an integrity failure is no reason to fall back");
      Matcher m = MISMATCH.matcher(e.getMessage());
      assertTrue(m.find(), e.getMessage());
      assertNotEquals(m.group(3), m.group(4), "expected and found differ");
      assertEquals(2, handedOut, "the two good batches, never the corrupted one");
      assertEquals(1L, rdma.stats().get("bodiesMismatched"));
      assertTrue(rdma.stats().get("bodiesVerified") >= 2, rdma.stats().toString());
      f.awaitServerIdle();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"many", "zc"})
  void withTheChecksumOffNothingIsChecked(String producer) throws Exception {
    AtomicInteger leases = new AtomicInteger();
    try (Fixture f =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION,
            b -> {
              b.bodyChecksum(false);
              b.bodyTap = corruptThird(leases);
            })) {
      RdmaFlightClient rdma = f.sharedRdmaClient();
      String name = producer + ":6:1000";
      FlightEndpoint endpoint =
          f.wrappedClient().getInfo(FlightDescriptor.path(name)).getEndpoints().get(0);
      int batches = 0;
      boolean sawCorruption = false;
      try (RdmaFlightStream s = rdma.getStream(endpoint)) {
        while (s.next()) {
          BigIntVector v = (BigIntVector) s.getRoot().getVector(0);
          for (int r = 0; r < v.getValueCount(); r++) {
            boolean expectNull = r % 17 == 16;
            if (v.isNull(r) != expectNull
                || (!expectNull && v.get(r) != TestProducer.value(batches, r))) {
              sawCorruption = true;
            }
          }
          batches++;
        }
      }
      assertEquals(6, batches);
      assertTrue(sawCorruption, "the flipped byte reached the client unchecked");
      assertEquals(0L, rdma.stats().get("bodiesVerified"));
      assertEquals(0L, rdma.stats().get("bodiesMismatched"));
      f.awaitServerIdle();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"many", "zc"})
  void everyIntactBodyIsVerified(String producer) throws Exception {
    try (Fixture f =
        new Fixture(CompressionUtil.CodecType.NO_COMPRESSION, b -> b.bodyChecksum(true))) {
      RdmaFlightClient rdma = f.sharedRdmaClient();
      FlightEndpoint endpoint =
          f.wrappedClient()
              .getInfo(FlightDescriptor.path(producer + ":5:3000"))
              .getEndpoints()
              .get(0);
      int batches = 0;
      try (RdmaFlightStream s = rdma.getStream(endpoint)) {
        while (s.next()) {
          batches++;
        }
      }
      assertEquals(5, batches);
      assertEquals(5L, rdma.stats().get("bodiesVerified"));
      assertEquals(0L, rdma.stats().get("bodiesMismatched"));
      f.awaitServerIdle();
    }
  }
}
