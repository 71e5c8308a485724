package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Each block of a request ends once, through one place, counted once. */
class BlockEndsTest {
  private static final InetSocketAddress PEER = new InetSocketAddress("127.0.0.1", 7000);
  private static final DirectoryPointer POINTER =
      new DirectoryPointer(
          0, RemoteRegion.of(new RegionDescriptor(ProviderKind.TCP, PEER, 1, 4096, 1 << 16)));

  private final ShuffleCounters counters = new ShuffleCounters();
  private final ReadServices services = new ReadServices(null, 8, 1 << 20, true, 0, counters);
  private final RecordingSpark spark = new RecordingSpark();

  /** Blocks leaving the one-sided path go to Spark's client, as a plan without re-resolve does. */
  private final BlockEnds ends =
      new BlockEnds(
          spark.listener,
          false,
          services.metrics,
          (ws, cause, reason) ->
              services.fallback.handOver(
                  spark,
                  new Peer("map-host", 7337, "exec-1"),
                  ws.stream().map(Wanted::id).toList(),
                  spark.listener,
                  null,
                  cause,
                  reason,
                  true));

  @AfterEach
  void close() {
    services.close();
  }

  private static Wanted block(int reduceId) {
    return new Wanted(
        "shuffle_1_5_" + reduceId, 5, new Route(POINTER, 0), reduceId, reduceId + 1, false);
  }

  @Test
  void aBlockHandedToSparkIsNotDeliveredOrFailedLaterAndItsBufferIsReleased() throws Exception {
    Wanted a = block(0);
    Wanted b = block(1);
    ends.settle(
        List.of(
            new Miss.Fallback(List.of(a), FallbackCause.READ, "scripted", null),
            new Miss.Failure(List.of(a, b), new IOException("scripted"))));
    Counted late = new Counted();
    ends.deliver(a, late, 10);
    ends.fallback(List.of(a, b), FallbackCause.INTERNAL, "again");
    services.threads.shutdown();
    services.threads.awaitTermination(30, TimeUnit.SECONDS);

    assertEquals(List.of(List.of(a.id())), spark.handedOver, "handed to Spark once");
    assertEquals(Map.of(b.id(), spark.failed.get(b.id())), spark.failed, "only b fails");
    assertEquals(List.of(), spark.delivered);
    assertEquals(1, late.released, "a late buffer goes back");
    assertEquals(1, counters.fallbackBlocks(FallbackCause.READ));
    assertEquals(1, counters.fallbackBlocks.sum());
    assertEquals(1, counters.failedBlocks.sum());
    assertEquals(0, counters.rdmaBlocks.sum());
  }

  @Test
  void aDeliveredBlockIsCountedOnceWithItsRequest() {
    Wanted a = block(0);
    Counted buf = new Counted();
    ends.deliver(a, buf, 10);
    ends.deliver(block(1), new Counted(), 5);
    ends.fail(a, new IOException("too late"));
    ends.fallback(List.of(a), FallbackCause.READ, "too late");

    assertEquals(List.of(a.id(), "shuffle_1_5_1"), spark.delivered);
    assertSame(null, spark.failed.get(a.id()));
    assertEquals(List.of(), spark.handedOver);
    assertEquals(1, buf.released, "our reference is released after Spark's listener");
    assertEquals(2, counters.rdmaBlocks.sum());
    assertEquals(15, counters.rdmaBytes.sum());
    assertEquals(1, counters.fetchRequests.sum(), "one request, however many blocks");
    assertEquals(0, counters.failedBlocks.sum() + counters.fallbackBlocks.sum());
  }

  /** A buffer that counts its releases. */
  private static final class Counted extends ManagedBuffer {
    int released;

    @Override
    public long size() {
      return 0;
    }

    @Override
    public ByteBuffer nioByteBuffer() {
      return ByteBuffer.allocate(0);
    }

    @Override
    public InputStream createInputStream() {
      return InputStream.nullInputStream();
    }

    @Override
    public ManagedBuffer retain() {
      return this;
    }

    @Override
    public ManagedBuffer release() {
      released++;
      return this;
    }

    @Override
    public Object convertToNetty() {
      throw new UnsupportedOperationException();
    }

    @SuppressWarnings("MissingOverride") // abstract in Spark 4's ManagedBuffer, absent in 3.5's
    public Object convertToNettyForSsl() {
      throw new UnsupportedOperationException();
    }
  }
}
