package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.memory.LimitExceededException;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.memory.MemoryUnit;
import io.memwire.transfer.metrics.TransportMetrics;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every registration is a unit of the node's allocator tree: regions count on the allocator they
 * were registered on, limits up the parents refuse atomically, and memory from {@link
 * TransferNode#allocateRegistered} is freed by the node once its region is released.
 */
class NodeMemoryTest {
  private static final int MIB = 1 << 20;
  private final List<TransferNode> nodes = new ArrayList<>();

  @AfterEach
  void closeAll() {
    TransferContractTest.closeAndCheck(nodes);
  }

  private TransferNode node(TransferConfigBuilder b) {
    TransferNode n =
        TransferNode.start(b.provider(ProviderKind.TCP).bindAddress("127.0.0.1").build());
    nodes.add(n);
    return n;
  }

  @Test
  void aRegionCountsOnTheAllocatorItWasRegisteredOn() throws Exception {
    TransferNode n = node(TransferConfig.builder());
    MemoryAllocator child = n.memory().newChild("consumer");
    MemoryRegion r = n.register(ByteBuffer.allocateDirect(5000), child, () -> {});
    assertEquals(5000, child.registeredBytes());
    assertEquals(5000, n.stats().registeredBytes());
    assertEquals(0, child.allocatedBytes(), "a region is not a piece handed out");
    assertEquals(MemoryUnit.Kind.REGISTERED, child.ownLiveUnits().get(0).kind());
    assertEquals(r, child.ownLiveUnits().get(0).owner());
    MemoryRegion onRoot = TestRegions.register(n, ByteBuffer.allocateDirect(3000));
    assertEquals(8000, n.memory().registeredBytes());
    r.close();
    r.released().get(10, TimeUnit.SECONDS);
    assertEquals(0, child.registeredBytes());
    assertEquals(3000, n.stats().registeredBytes());
    child.close();
    assertTrue(n.memory().leakReports().isEmpty(), n.memory().leakReports().toString());
    n.close();
    assertFalse(onRoot.isOpen(), "the node closes every region on its books");
  }

  @Test
  void aRegionRegisteredInPlaceOwnsItsReleaseAndGivesItBackOnce() throws Exception {
    TransferNode n = node(TransferConfig.builder());
    MemoryAllocator child = n.memory().newChild("consumer", 8192);
    AtomicInteger releases = new AtomicInteger();
    MemoryRegion r = n.register(ByteBuffer.allocateDirect(5000), child, releases::incrementAndGet);
    CompletableFuture<Integer> atRelease = r.released().thenApply(v -> releases.get());
    assertEquals(0, releases.get(), "held while registered");

    // A refusal gives the reference back at once and leaves nothing on the books.
    AtomicInteger refused = new AtomicInteger();
    assertThrows(
        RegistrationException.class,
        () -> n.register(ByteBuffer.allocateDirect(5000), child, refused::incrementAndGet));
    assertThrows(
        RegistrationException.class,
        () -> n.register(ByteBuffer.allocate(100), child, refused::incrementAndGet));
    assertEquals(2, refused.get());
    assertEquals(5000, child.registeredBytes());

    r.close();
    r.close();
    assertEquals(1, atRelease.get(10, TimeUnit.SECONDS), "released() completes after the release");
    assertEquals(1, releases.get());
    assertEquals(0, child.registeredBytes());

    // The node's close closes what is still registered, and so gives its reference back.
    AtomicInteger kept = new AtomicInteger();
    n.register(ByteBuffer.allocateDirect(100), child, kept::incrementAndGet);
    n.close();
    assertEquals(1, kept.get());
    assertEquals(0, n.stats().registeredBytes());
    assertThrows(
        IllegalStateException.class,
        () -> n.register(ByteBuffer.allocateDirect(100), n.memory(), refused::incrementAndGet));
    assertEquals(3, refused.get(), "a closed node gives the reference back too");
  }

  @Test
  void allocateRegisteredServesUntilReleasedThenFreesItAll() throws Exception {
    TransferNode server = node(TransferConfig.builder());
    TransferNode client = node(TransferConfig.builder());
    MemoryAllocator child = server.memory().newChild("consumer");
    byte[] data = TransferContractTest.random(new Random(5), 10_000);
    BufferUnit b = server.allocateRegistered(child, data.length, "test memory");
    b.buffer().put(data);
    assertEquals(0, b.address() % 4096, "page aligned");
    assertEquals(data.length, child.registeredBytes());
    RemoteRegion remote = b.region().remote();
    Connection c = client.connection(server.localAddress());
    TransferBuffer got = TransferContractTest.await(c.read(ReadRequest.of(remote, 0, 10_000)));
    assertArrayEquals(data, TransferContractTest.bytes(got));
    got.release();
    assertTrue(b.release());
    assertFalse(b.region().isOpen(), "the last release closes the region");
    b.region().released().get(10, TimeUnit.SECONDS);
    assertEquals(0, child.registeredBytes());
    TransferContractTest.awaitFailure(
        RemoteAccessException.class, c.read(ReadRequest.of(remote, 0, 100)));
    child.close();
    assertTrue(server.memory().leakReports().isEmpty(), server.memory().leakReports().toString());
  }

  @Test
  void allocateDirectIsOnTheBooksButNotRegistered() {
    TransferNode n = node(TransferConfig.builder().registrationBudget(MIB).poolMaxBytes(MIB));
    MemoryAllocator child = n.memory().newChild("arenas", 4 * MIB);
    BufferUnit d = n.allocateDirect(child, 2 * MIB, "arena");
    assertNull(d.region());
    assertEquals(2 * MIB, child.directBytes());
    assertEquals(0, n.stats().registeredBytes(), "not against the registration budget");
    RegistrationException e =
        assertThrows(RegistrationException.class, () -> n.allocateDirect(child, 3 * MIB, "more"));
    assertTrue(
        e.getMessage().contains("limit of allocator '" + child.path() + "'"), e.getMessage());
    assertTrue(e.getCause() instanceof LimitExceededException);
    d.release();
    assertEquals(0, child.directBytes());
    child.close();
  }

  @Test
  void theBudgetIsTheRootsLimitAndRefusesWithNothingReserved() {
    TransferNode n = node(TransferConfig.builder().registrationBudget(MIB).poolMaxBytes(MIB));
    MemoryAllocator child = n.memory().newChild("consumer", 2 * MIB);
    BufferUnit held = n.allocateRegistered(child, 768 << 10, "held");
    RegistrationException e =
        assertThrows(
            RegistrationException.class, () -> n.allocateRegistered(child, 512 << 10, "too much"));
    assertTrue(
        e.getMessage()
            .startsWith(
                "registration budget exhausted: 786432 bytes registered + 524288 requested > registrationBudget=1048576"),
        e.getMessage());
    assertEquals(768 << 10, child.registeredBytes(), "nothing of the refused reservation stays");
    assertEquals(768 << 10, n.stats().registeredBytes());
    assertThrows(
        RegistrationException.class,
        () -> TestRegions.register(n, ByteBuffer.allocateDirect(512 << 10)),
        "a region on the root's own books counts against the same budget");
    held.release();
    n.allocateRegistered(child, 512 << 10, "fits now").release();
    child.close();
  }

  @Test
  void aFileRegionIsOneUnitOfItsConsumersAllocatorAndGoesBackToZero(@TempDir Path dir)
      throws Exception {
    TransferNode n = node(TransferConfig.builder());
    MemoryAllocator child = n.memory().newChild("consumer");
    Path f = dir.resolve("data");
    Files.write(f, new byte[100_000]);
    MemoryRegion r = n.register(f, 1000, 90_000, child);
    assertEquals(90_000, child.registeredBytes());
    assertEquals(1, child.ownLiveUnits().size());
    assertEquals(r, child.ownLiveUnits().get(0).owner());
    assertEquals(90_000, n.stats().registeredBytes(), "on the root too, once");
    r.close();
    r.released().get(10, TimeUnit.SECONDS);
    assertEquals(0, child.registeredBytes());
    assertEquals(0, child.ownLiveUnits().size());
    assertEquals(0, n.stats().registeredBytes());
    assertEquals(0L, n.stats().get(TransportMetrics.REGISTERED_REGIONS));
    child.close();
    assertTrue(n.memory().leakReports().isEmpty(), n.memory().leakReports().toString());
  }

  @Test
  void aFileRegionOverItsAllocatorsLimitIsRefusedWholeNamingTheLimit(@TempDir Path dir)
      throws Exception {
    TransferNode n = node(TransferConfig.builder().maxSegmentSize(64 << 10));
    MemoryAllocator parent = n.memory().newChild("service", 300_000);
    MemoryAllocator child = parent.newChild("app", Long.MAX_VALUE);
    Path f = dir.resolve("data");
    Files.write(f, new byte[400_000]);
    MemoryRegion held = n.register(f, 0, 200_000, child);
    long mapped = n.stats().get(TransportMetrics.MAPPED_SEGMENTS);
    RegistrationException e =
        assertThrows(RegistrationException.class, () -> n.register(f, 0, 150_000, child));
    assertTrue(e.getMessage().contains("'" + parent.path() + "'"), e.getMessage());
    assertTrue(e.getMessage().contains("limit 300000"), e.getMessage());
    assertTrue(e.getCause() instanceof LimitExceededException, String.valueOf(e.getCause()));
    assertEquals(200_000, child.registeredBytes(), "nothing of the refused region stays");
    assertEquals(200_000, parent.registeredBytes());
    assertEquals(200_000, n.stats().registeredBytes());
    assertEquals(1L, n.stats().get(TransportMetrics.REGISTERED_REGIONS));
    assertEquals(mapped, n.stats().get(TransportMetrics.MAPPED_SEGMENTS), "nothing mapped");
    held.close();
    held.released().get(10, TimeUnit.SECONDS);
    MemoryRegion fits = n.register(f, 0, 300_000, child);
    assertEquals(300_000, parent.registeredBytes());
    fits.close();
    fits.released().get(10, TimeUnit.SECONDS);
    assertEquals(0, parent.registeredBytes());
    parent.close();
  }
}
