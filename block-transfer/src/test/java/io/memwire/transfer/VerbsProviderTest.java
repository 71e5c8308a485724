package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What only verbs has: NIC-level access errors, rkeys, queue-pair recovery, teardown. */
class VerbsProviderTest {
  private final List<TransferNode> nodes = new ArrayList<>();

  @BeforeEach
  void requireVerbs() {
    VerbsTransferContractTest.assumeVerbs();
  }

  @AfterEach
  void close() {
    nodes.forEach(TransferNode::close);
    nodes.forEach(TransferContractTest::assertReleased);
  }

  private TransferNode node() {
    TransferNode n = TransferNode.start(VerbsTransferContractTest.verbsConfig().build());
    nodes.add(n);
    assertEquals(ProviderKind.VERBS, n.provider());
    return n;
  }

  private static byte[] bytes(TransferBuffer b) {
    ByteBuffer v = b.nioBuffer();
    byte[] out = new byte[v.remaining()];
    v.get(out);
    return out;
  }

  @Test
  void aDeregisteredRegionGivesTheRemoteAccessErrorNotStaleBytes() throws Exception {
    byte[] data = TransferContractTest.random(new Random(1), 256 << 10);
    ByteBuffer memory = TransferContractTest.direct(data);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = server.register(memory);
    RegionDescriptor d = region.descriptors().get(0);
    assertEquals(0, d.key() >>> 32, "the descriptor carries a 32-bit rkey");
    Connection c = client.connection(server.localAddress());
    TransferBuffer first = c.read(ReadRequest.of(region.remote(), 0, 4096)).get(60, TimeUnit.SECONDS);
    assertArrayEquals(Arrays.copyOf(data, 4096), bytes(first));
    first.release();

    region.close(); // the memory itself stays allocated and unchanged: only the MR is gone
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> c.read(ReadRequest.of(region.remote(), 0, 4096)).get(60, TimeUnit.SECONDS));
    RemoteAccessException rae = assertInstanceOf(RemoteAccessException.class, e.getCause());
    assertEquals(RemoteAccessException.Reason.ACCESS_ERROR, rae.reason());
    assertEquals(d, rae.descriptor());
    assertEquals(1, client.stats().remoteAccessErrors());
    assertEquals(0, client.stats().poolBuffersOutstanding(), "no buffer of a failed read leaked");
    memory.clear();
    byte[] still = new byte[4096];
    memory.get(still);
    assertArrayEquals(Arrays.copyOf(data, 4096), still, "the bytes were there to be stolen");
  }

  @Test
  void oneRefusedReadInABatchFailsAloneAndTheReadsBehindItStillArrive() throws Exception {
    byte[] data = TransferContractTest.random(new Random(2), 512 << 10);
    ByteBuffer memory = TransferContractTest.direct(data);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = server.register(memory);
    RegionDescriptor real = region.descriptors().get(0);
    RegionDescriptor forged = new RegionDescriptor(real.provider(), real.node(),
        real.key() ^ 0x00ff00ffL, real.address(), real.length());
    List<ReadRequest> reqs = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      reqs.add(i == 5 ? ReadRequest.of(forged, 0, 1000)
          : ReadRequest.of(region.remote(), i * 16_000L, 16_000));
    }
    ReadBatch batch = client.connection(server.localAddress()).read(reqs);
    for (int i = 0; i < reqs.size(); i++) {
      if (i == 5) {
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> batch.result(5).get(60, TimeUnit.SECONDS));
        assertInstanceOf(RemoteAccessException.class, e.getCause());
        continue;
      }
      TransferBuffer b = batch.result(i).get(60, TimeUnit.SECONDS);
      assertArrayEquals(Arrays.copyOfRange(data, i * 16_000, i * 16_000 + 16_000), bytes(b),
          "read " + i);
      b.release();
    }
    TransferStats s = client.stats();
    assertEquals(23, s.readsCompleted());
    assertEquals(1, s.remoteAccessErrors());
    assertTrue(s.asMap().get("verbsReconnects") >= 1, "the queue pair was re-established: " + s);
  }

  /**
   * Reads that a completion lets go are posted together: a long batch goes out in chains of up
   * to the queue depth (one post call, one signaled request each), not one post per read, and
   * every read still lands its own bytes (the reused work requests are rewritten correctly).
   */
  @Test
  void aLongBatchIsPostedInChainsAndEveryReadGetsItsOwnBytes() throws Exception {
    byte[] data = TransferContractTest.random(new Random(3), 1 << 20);
    ByteBuffer memory = TransferContractTest.direct(data);
    TransferNode server = node();
    TransferNode client = TransferNode.start(
        VerbsTransferContractTest.verbsConfig().maxOutstandingRequests(16).build());
    nodes.add(client);
    MemoryRegion region = server.register(memory);
    int reads = 240;
    int size = 4096;
    List<ReadRequest> reqs = new ArrayList<>();
    for (int i = 0; i < reads; i++) {
      reqs.add(ReadRequest.of(region.remote(), (i * 7L % 256) * size, size));
    }
    ReadBatch batch = client.connection(server.localAddress()).read(reqs);
    for (int i = 0; i < reads; i++) {
      TransferBuffer b = batch.result(i).get(120, TimeUnit.SECONDS);
      int off = (int) (i * 7L % 256) * size;
      assertArrayEquals(Arrays.copyOfRange(data, off, off + size), bytes(b), "read " + i);
      b.release();
    }
    java.util.Map<String, Long> s = client.stats().asMap();
    assertEquals(reads, s.get("verbsPostedReads"), s.toString());
    assertTrue(s.get("verbsPostCalls") * 4 <= reads,
        "reads freed by one completion go out as one chain: " + s);
    assertTrue(s.get("verbsCompletions") * 4 <= reads, "one signaled request per chain: " + s);
  }

  @Test
  void keysAreRkeysAndDifferPerRegion() {
    TransferNode server = node();
    MemoryRegion a = server.register(ByteBuffer.allocateDirect(8192));
    MemoryRegion b = server.register(ByteBuffer.allocateDirect(8192));
    long ka = a.descriptors().get(0).key();
    long kb = b.descriptors().get(0).key();
    assertNotEquals(ka, kb);
    assertEquals(0, ka >>> 32);
    assertEquals(2L, server.stats().asMap().get("verbsRegistrations"));
    a.close();
    b.close();
    assertEquals(0L, server.stats().asMap().get("verbsRegistrations"));
  }
}
