package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Destination memory is never allocated or registered on a transport's I/O thread, even when the
 * read pool must grow for a read that the I/O thread moves into flight after a completion. The tcp
 * provider asserts that no registration runs on its I/O threads (tests run with assertions on): a
 * registration there fails the read and counts a loop error.
 */
class DestinationMemoryTest {
  private final List<TransferNode> nodes = new ArrayList<>();

  @AfterEach
  void closeAll() {
    TransferContractTest.closeAndCheck(nodes);
  }

  private TransferNode tcpNode(TransferConfigBuilder b) {
    TransferNode n =
        TransferNode.start(b.provider(ProviderKind.TCP).bindAddress("127.0.0.1").build());
    nodes.add(n);
    return n;
  }

  @Test
  void thePoolGrowsOffTheIoThreadWhileReadsComplete() throws Exception {
    TransferNode server = tcpNode(TransferConfig.builder());
    // One read in flight: every read after the first is moved into flight by the I/O thread when
    // the one before it completes. Each needs a size class the pool has no slab for yet; past
    // 16 MiB of slabs they need dedicated (one-off) registrations.
    TransferNode client =
        tcpNode(TransferConfig.builder().maxOutstandingRequests(1).poolMaxBytes(16 << 20));
    byte[] data = new byte[1 << 20];
    new Random(7).nextBytes(data);
    ByteBuffer memory = ByteBuffer.allocateDirect(data.length);
    memory.put(data).flip();
    MemoryRegion region = TestRegions.register(server, memory);

    List<ReadRequest> requests = new ArrayList<>();
    for (int shift = 12; shift <= 20; shift++) {
      int length = (1 << shift) - 100; // odd sizes: the class, not the exact length, matters
      requests.add(ReadRequest.of(region.remote(), 100, length));
    }
    ReadBatch batch = client.connection(server.localAddress()).read(requests);
    for (int i = 0; i < requests.size(); i++) {
      TransferBuffer b = batch.result(i).get(30, TimeUnit.SECONDS);
      try {
        byte[] got = new byte[requests.get(i).length()];
        b.nioBuffer().get(got);
        byte[] want = new byte[got.length];
        System.arraycopy(data, 100, want, 0, want.length);
        assertArrayEquals(want, got, "bytes of read " + i);
      } finally {
        b.release();
      }
    }
    assertEquals(0, client.stats().asMap().get("loopErrors"), "I/O thread failures");
    assertEquals(4L << 20 << 2, client.bufferPool().slabBytes(), "four classes got slabs");
    assertTrue(client.bufferPool().dedicatedAllocations() > 0, "the rest got dedicated buffers");
    region.close();
  }

  @Test
  void memoryFreedWhileThePoolGrowsIsNotTakenTwiceForTheSameRead() throws Exception {
    TransferNode server = tcpNode(TransferConfig.builder());
    TransferNode client = tcpNode(TransferConfig.builder().poolMaxBytes(64 << 20));
    int size = (4 << 20) - 100; // the 4 MiB class: one piece per slab
    ByteBuffer memory = ByteBuffer.allocateDirect(size);
    MemoryRegion region = TestRegions.register(server, memory);
    Connection c = client.connection(server.localAddress());
    TransferBuffer held =
        c.read(ReadRequest.of(region.remote(), 0, size)).get(30, TimeUnit.SECONDS);

    // Park the pool's thread, so the next read of the class waits for growth...
    CountDownLatch parked = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    client
        .bufferPool()
        .growOffIoThread(
            () -> {
              parked.countDown();
              awaitUninterruptibly(resume);
            });
    assertTrue(parked.await(30, TimeUnit.SECONDS));
    var waiting = c.read(ReadRequest.of(region.remote(), 0, size));
    // ...then free the only piece and pump again (a second read): the waiting read must not take
    // the freed piece while the pool's thread is about to give it memory too.
    held.release();
    var next = c.read(ReadRequest.of(region.remote(), 0, 100));
    resume.countDown();
    waiting.get(30, TimeUnit.SECONDS).release();
    next.get(30, TimeUnit.SECONDS).release();

    long peak = client.stats().memoryPeakBytes(TransferNode.READ_POOL);
    assertTrue(peak <= size + 100, "one destination per read at a time, peak " + peak);
    assertEquals(8L << 20, client.bufferPool().slabBytes(), "one slab for each of the two classes");
    region.close();
  }

  private static void awaitUninterruptibly(CountDownLatch latch) {
    try {
      latch.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
