package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.spi.TransportProvider;
import io.memwire.transfer.ucx.UcxTestSupport;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Memory from {@link TransferNode#allocateRegistered} on a ucx node is UCX's own allocation: over
 * UCX's shared-memory transports a peer reads it while the serving node's worker does not progress
 * at all (memory the node allocated and registered by address would wait for that progress, as UCX
 * emulates such GETs), and it goes back to the books and to UCX when released.
 */
class UcxServedMemoryTest {
  private final List<TransferNode> nodes = new ArrayList<>();

  @BeforeAll
  static void ucxLoads() {
    UcxTestSupport.assumeUcx();
  }

  @AfterEach
  void closeNodes() {
    nodes.forEach(TransferNode::close);
    nodes.clear();
    assertTrue(UcxTestSupport.allReleased(), UcxTestSupport.describe());
  }

  private static TransferConfig sharedMemory() {
    return TransferConfig.builder()
        .provider(ProviderKind.UCX)
        .bindAddress("127.0.0.1")
        .set("ucxTransports", "posix,sysv")
        .build();
  }

  private TransportProvider provider;
  private TransferNode server;
  private TransferNode client;

  private void startNodes() {
    TransferConfig config = sharedMemory();
    provider = UcxTestSupport.open(config);
    server =
        new TransferNode(config, provider, "test", NanoClock.SYSTEM, ConnectionPool.newTimer());
    nodes.add(server);
    client = TransferNode.start(config);
    nodes.add(client);
  }

  /** Reads all of {@code region} in 1 MiB pieces while the server's worker is held. */
  private byte[] readHeld(MemoryRegion region, int size) throws Exception {
    byte[] got = new byte[size];
    Runnable resume = UcxTestSupport.holdProgress(provider);
    try {
      Connection c = client.connection(server.localAddress());
      List<ReadRequest> reads = new ArrayList<>();
      int piece = 1 << 20;
      for (int off = 0; off < size; off += piece) {
        reads.add(ReadRequest.of(region.remote(), off, Math.min(piece, size - off)));
      }
      List<CompletableFuture<TransferBuffer>> futures = c.read(reads).results();
      for (int i = 0; i < futures.size(); i++) {
        TransferBuffer b = futures.get(i).get(60, TimeUnit.SECONDS);
        ByteBuffer bytes = b.nioBuffer();
        bytes.get(got, i * piece, bytes.remaining());
        b.release();
      }
    } finally {
      resume.run();
    }
    return got;
  }

  @Test
  void aPeerReadsAllocatedMemoryWhileTheServingWorkerIsHeld() throws Exception {
    startNodes();
    int size = 3 * 1024 * 1024 + 123;
    MemoryAllocator account = server.memory().newChild("served-test", 8L << 20);
    BufferUnit unit = server.allocateRegistered(account, size, "test bytes");
    assertEquals(0, unit.address() % 4096, "page-aligned");
    assertEquals(size, unit.buffer().remaining());
    assertEquals(size, account.registeredBytes());
    byte[] data = new byte[size];
    new Random(7).nextBytes(data);
    unit.buffer().duplicate().put(data);
    MemoryRegion region = unit.region();

    byte[] got = readHeld(region, size);
    assertArrayEquals(data, got);

    assertTrue(unit.release());
    region.released().get(60, TimeUnit.SECONDS);
    assertEquals(0, account.registeredBytes());
    assertEquals(0, account.liveUnits());
    account.close();
  }

  @Test
  void aRegionInsideDirectMemoryIsReadWhileTheServingWorkerIsHeld() throws Exception {
    startNodes();
    int size = 2 * 1024 * 1024;
    MemoryAllocator account = server.memory().newChild("direct-test", 8L << 20);
    BufferUnit unit = server.allocateDirect(account, size, "test arena");
    assertNull(unit.region(), "not registered as a whole");
    assertEquals(size, account.directBytes());
    byte[] data = new byte[size];
    new Random(8).nextBytes(data);
    unit.buffer().duplicate().put(data);
    // Leases come and go: each slice is registered, read with the worker held, then closed.
    int length = 1024 * 1024 + 17;
    for (int round = 0; round < 3; round++) {
      int from = 12288 + round * 4096;
      MemoryRegion slice =
          server.register(
              unit.buffer().duplicate().position(from).limit(from + length).slice(),
              server.memory(),
              unit.retain()::release);
      byte[] got = readHeld(slice, length);
      assertArrayEquals(Arrays.copyOfRange(data, from, from + length), got, "round " + round);
      slice.close();
      slice.released().get(60, TimeUnit.SECONDS);
    }
    assertTrue(unit.release());
    assertEquals(0, account.directBytes());
    assertEquals(0, account.liveUnits());
    account.close();
  }

  @Test
  void memoryStillHeldWhenTheNodeClosesStaysMapped() throws Exception {
    startNodes();
    MemoryAllocator account = server.memory().newChild("held-test", 1L << 20);
    BufferUnit unit = server.allocateDirect(account, 65536, "held past close");
    byte[] data = new byte[65536];
    new Random(9).nextBytes(data);
    unit.buffer().duplicate().put(data);
    long before = UcxTestSupport.leftMapped();

    server.close(); // the unit is still held: a leak the books report, not memory pulled away
    nodes.remove(server);

    assertEquals(before + 1, UcxTestSupport.leftMapped());
    byte[] after = new byte[data.length];
    unit.buffer().duplicate().get(after); // unmapped, this would kill the JVM
    assertArrayEquals(data, after);
    unit.release(); // after the close: nothing left to call in UCX, no crash
  }
}
