package io.memwire.flight.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Arenas are registered once, blocks split and merge, limits hold and close returns it all. */
class ArenaMemoryTest {
  private static final long MIB = 1 << 20;
  private TransferNode node;

  @BeforeEach
  void start() {
    node = TransferNode.start(TransferConfig.builder().provider(ProviderKind.TCP).build());
  }

  @AfterEach
  void stop() {
    node.close();
    assertEquals(0, node.stats().memoryBytes(), node.memory().toVerboseString());
  }

  @Test
  void blocksSplitAndMergeWithinOneArena() {
    try (ArenaMemory m = new ArenaMemory(node, MIB, 4 * MIB, "test")) {
      List<ArenaMemory.Block> quarter = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        quarter.add(m.allocate(MIB / 4));
      }
      assertEquals(MIB, m.arenaBytes(), "four quarters share one arena");
      ArenaMemory.Block small = m.allocate(100);
      assertEquals(512, small.size(), "smallest block");
      assertEquals(2 * MIB, m.arenaBytes(), "a full arena makes a second one");
      small.release();
      quarter.forEach(ArenaMemory.Block::release);
      ArenaMemory.Block whole = m.allocate(MIB);
      assertEquals(2 * MIB, m.arenaBytes(), "freed quarters merged back into a whole arena");
      ArenaMemory.Location loc = m.locate(whole.address() + 10, 100);
      assertNotNull(loc);
      assertEquals(whole.regionOffset() + 10, loc.offset());
      assertNull(m.locate(whole.address() + MIB - 10, 100), "range past the arena end");
      whole.release();
      assertEquals(0, m.outstandingBlocks());
      IllegalStateException e = assertThrows(IllegalStateException.class, whole::release);
      assertTrue(
          e.getMessage().contains("double release")
              && e.getMessage()
                  .contains("'" + node.memory().name() + "/" + ArenaMemory.LANDING_ALLOCATOR + "'"),
          e.getMessage());
    }
    assertTrue(node.memory().leakReports().isEmpty(), node.memory().leakReports().toString());
    assertEquals(0, node.stats().registeredBytes(), "close deregisters every arena");
  }

  @Test
  void blocksPinWhatWasAskedNotAPowerOfTwo() {
    try (ArenaMemory m = new ArenaMemory(node, MIB, 4 * MIB, "test")) {
      // Three bodies just over 300 KiB: a power-of-two allocator would give each 512 KiB and
      // need two arenas; sized blocks share one.
      long body = 300 * 1024 + 1;
      List<ArenaMemory.Block> bs = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        bs.add(m.allocate(body));
      }
      assertEquals(MIB, m.arenaBytes(), "three sized blocks fit one arena");
      long each = 300 * 1024 + 512;
      assertEquals(each, bs.get(0).size(), "rounded up to the 512-byte unit only");
      assertEquals(3 * each, m.allocatedBytesNow(), "pinned bytes are the blocks' sizes");
      for (ArenaMemory.Block b : bs) {
        assertEquals(0, b.address() % 512, "blocks stay 512-byte aligned");
      }
      // Free the middle block, then its neighbours: the extents merge back into one.
      bs.get(1).release();
      assertEquals(2, m.freeExtents(), "the freed middle and the arena's tail");
      bs.get(0).release();
      assertEquals(2, m.freeExtents(), "first and middle merged");
      bs.get(2).release();
      assertEquals(1, m.freeExtents(), "everything merged into the whole arena");
      assertEquals(0, m.allocatedBytesNow());
      ArenaMemory.Block whole = m.allocate(MIB);
      assertEquals(MIB, m.arenaBytes(), "the merged arena holds a whole-arena block");
      whole.release();
    }
    assertEquals(0, node.stats().registeredBytes());
  }

  @Test
  void bestFitKeepsLargeExtentsWhole() {
    try (ArenaMemory m = new ArenaMemory(node, MIB, MIB, "test")) {
      ArenaMemory.Block a = m.allocate(4096);
      ArenaMemory.Block gap = m.allocate(8192);
      ArenaMemory.Block b = m.allocate(4096);
      gap.release();
      // A small block goes into the 8 KiB hole, not the large tail.
      ArenaMemory.Block small = m.allocate(4096);
      assertEquals(gap.regionOffset(), small.regionOffset());
      ArenaMemory.Block rest = m.allocate(MIB - 4 * 4096);
      assertNotNull(rest, "the tail is still one extent");
      assertNull(m.tryAllocate(8192), "only the 4 KiB left in the hole remains");
      RegistrationException refused =
          assertThrows(RegistrationException.class, () -> m.allocate(8192));
      assertTrue(
          refused.getMessage().contains("arenas: " + MIB + " bytes, free extents: 1"),
          "the refusal says how fragmented the arenas are: " + refused.getMessage());
      for (ArenaMemory.Block x : List.of(a, b, small, rest)) {
        x.release();
      }
      assertEquals(1, m.freeExtents());
      assertEquals(0, m.outstandingBlocks());
    }
  }

  @Test
  void oversizedBlockGetsItsOwnArenaAndGivesItBack() {
    try (ArenaMemory m = new ArenaMemory(node, MIB, 8 * MIB, "test")) {
      ArenaMemory.Block big = m.allocate(3 * MIB + 5);
      assertEquals(3 * MIB + 5, big.size());
      assertEquals(3 * MIB + 5, node.stats().registeredBytes());
      big.release();
      assertEquals(0, m.arenaBytes());
      assertEquals(0, node.stats().registeredBytes());
    }
  }

  @Test
  void limitWaitsForFreesThenFailsWithDeadline() throws Exception {
    try (ArenaMemory m = new ArenaMemory(node, MIB, 2 * MIB, "limited")) {
      ArenaMemory.Block a = m.allocate(MIB);
      ArenaMemory.Block b = m.allocate(MIB);
      assertNull(m.tryAllocate(512));
      RegistrationException e =
          assertThrows(RegistrationException.class, () -> m.allocate(512, Duration.ofMillis(50)));
      assertTrue(
          e.getMessage().contains("limited") && e.getMessage().contains("maxBytes"),
          e.getMessage());
      CompletableFuture<ArenaMemory.Block> waiting =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return m.allocate(4096, Duration.ofSeconds(10));
                } catch (InterruptedException ex) {
                  throw new IllegalStateException(ex);
                }
              });
      a.release();
      ArenaMemory.Block c = waiting.get(10, TimeUnit.SECONDS);
      c.release();
      b.release();
    }
  }

  @Test
  void arrowAllocatorOverRegisteredMemory() {
    try (ArenaMemory m = new ArenaMemory(node, MIB, 4 * MIB, "arrow")) {
      try (BufferAllocator root = m.newRootAllocator(Long.MAX_VALUE)) {
        ArrowBuf buf = root.buffer(10_000);
        buf.setLong(0, 42L);
        assertNotNull(m.locate(buf.memoryAddress(), 10_000), "Arrow memory is registered");
        assertEquals(1, m.outstandingBlocks());
        buf.close();
        assertEquals(0, m.outstandingBlocks());
        assertEquals(0, root.getEmpty().capacity());
      }
    }
  }

  @Test
  void retainedBlockGoesBackAtTheLastReleaseAndPeakIsKept() {
    try (ArenaMemory m = new ArenaMemory(node, MIB, 4 * MIB, "test")) {
      ArenaMemory.Block a = m.allocate(4096);
      ArenaMemory.Block b = m.allocate(8192);
      b.release();
      a.retain();
      assertEquals(false, a.release(), "a reference is left");
      assertEquals(4096, m.allocatedBytesNow());
      assertEquals(4096, node.stats().memoryBytes(ArenaMemory.LANDING_ALLOCATOR));
      assertTrue(a.release());
      assertEquals(0, m.outstandingBlocks());
      assertEquals(4096 + 8192, m.peakAllocatedBytes());
      assertEquals(4096 + 8192, node.stats().memoryPeakBytes(ArenaMemory.LANDING_ALLOCATOR));
    }
  }

  @Test
  void closeWithBlockInUseKeepsItsArenaUntilFreed() {
    ArenaMemory m = new ArenaMemory(node, MIB, 4 * MIB, "test");
    ArenaMemory.Block held = m.allocate(4096);
    m.close();
    assertEquals(MIB, m.arenaBytes(), "memory a reader holds must not vanish");
    assertEquals(1, node.memory().leakReports().size(), "closing with a block out is reported");
    assertEquals(
        node.memory().name() + "/" + ArenaMemory.LANDING_ALLOCATOR,
        node.memory().leakReports().get(0).allocator());
    assertEquals(4096, node.memory().leakReports().get(0).bytes());
    held.release();
    assertEquals(0, m.arenaBytes());
    assertEquals(0, node.stats().registeredBytes());
  }

  @Test
  void unregisteredArenasExposeOnlyTheSlicesRegistered() throws Exception {
    try (ArenaMemory m = new ArenaMemory(node, MIB, 4 * MIB, "server", false)) {
      ArenaMemory.Block b = m.allocate(1000);
      assertNull(b.region(), "the arena is not a region");
      assertEquals(0, node.stats().registeredBytes(), "nothing registered for the arena");
      org.apache.arrow.memory.util.MemoryUtil.setMemory(b.address(), 1000, (byte) 7);
      // The region owns the block: its release gives the block back.
      io.memwire.transfer.MemoryRegion r =
          node.register(b.slice(100, 300), node.memory(), b::release);
      assertEquals(300, r.length());
      assertEquals(b.address() + 100, r.descriptors().get(0).address());
      assertEquals(300, node.stats().registeredBytes());
      assertThrows(IllegalArgumentException.class, () -> b.slice(900, 200), "past the block");
      r.close();
      r.released().get(10, TimeUnit.SECONDS);
      assertEquals(0, m.outstandingBlocks(), "the region gave its block back");
      try (BufferAllocator root = m.newRootAllocator(Long.MAX_VALUE)) {
        ArrowBuf buf = root.buffer(1000);
        // Arrow gets the freed block back zeroed, never the bytes it held before.
        for (int i = 0; i < 1000; i++) {
          assertEquals(0, buf.getByte(i), "byte " + i);
        }
        assertNotNull(m.locate(buf.memoryAddress(), 1000).slice(1000));
        buf.close();
      }
    }
    assertEquals(0, node.stats().registeredBytes());
  }
}
