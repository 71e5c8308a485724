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
class RegisteredMemoryTest {
  private static final long MIB = 1 << 20;
  private TransferNode node;

  @BeforeEach
  void start() {
    node = TransferNode.start(TransferConfig.builder().provider(ProviderKind.TCP).build());
  }

  @AfterEach
  void stop() {
    node.close();
  }

  @Test
  void blocksSplitAndMergeWithinOneArena() {
    try (RegisteredMemory m = new RegisteredMemory(node, MIB, 4 * MIB, "test")) {
      List<RegisteredMemory.Block> quarter = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        quarter.add(m.allocate(MIB / 4));
      }
      assertEquals(MIB, m.arenaBytes(), "four quarters share one arena");
      RegisteredMemory.Block small = m.allocate(100);
      assertEquals(512, small.size(), "smallest block");
      assertEquals(2 * MIB, m.arenaBytes(), "a full arena makes a second one");
      small.free();
      quarter.forEach(RegisteredMemory.Block::free);
      RegisteredMemory.Block whole = m.allocate(MIB);
      assertEquals(2 * MIB, m.arenaBytes(), "freed quarters merged back into a whole arena");
      RegisteredMemory.Location loc = m.locate(whole.address() + 10, 100);
      assertNotNull(loc);
      assertEquals(whole.regionOffset() + 10, loc.offset());
      assertNull(m.locate(whole.address() + MIB - 10, 100), "range past the arena end");
      whole.free();
      assertEquals(0, m.outstandingBlocks());
      assertThrows(IllegalStateException.class, whole::free);
    }
    assertEquals(0, node.stats().registeredBytes(), "close deregisters every arena");
  }

  @Test
  void oversizedBlockGetsItsOwnArenaAndGivesItBack() {
    try (RegisteredMemory m = new RegisteredMemory(node, MIB, 8 * MIB, "test")) {
      RegisteredMemory.Block big = m.allocate(3 * MIB + 5);
      assertEquals(3 * MIB + 5, big.size());
      assertEquals(3 * MIB + 5, node.stats().registeredBytes());
      big.free();
      assertEquals(0, m.arenaBytes());
      assertEquals(0, node.stats().registeredBytes());
    }
  }

  @Test
  void limitWaitsForFreesThenFailsWithDeadline() throws Exception {
    try (RegisteredMemory m = new RegisteredMemory(node, MIB, 2 * MIB, "limited")) {
      RegisteredMemory.Block a = m.allocate(MIB);
      RegisteredMemory.Block b = m.allocate(MIB);
      assertNull(m.tryAllocate(512));
      RegistrationException e = assertThrows(RegistrationException.class,
          () -> m.allocate(512, Duration.ofMillis(50)));
      assertTrue(e.getMessage().contains("limited") && e.getMessage().contains("maxBytes"),
          e.getMessage());
      CompletableFuture<RegisteredMemory.Block> waiting = CompletableFuture.supplyAsync(() -> {
        try {
          return m.allocate(4096, Duration.ofSeconds(10));
        } catch (InterruptedException ex) {
          throw new IllegalStateException(ex);
        }
      });
      a.free();
      RegisteredMemory.Block c = waiting.get(10, TimeUnit.SECONDS);
      c.free();
      b.free();
    }
  }

  @Test
  void arrowAllocatorOverRegisteredMemory() {
    try (RegisteredMemory m = new RegisteredMemory(node, MIB, 4 * MIB, "arrow")) {
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
  void closeWithBlockInUseKeepsItsArenaUntilFreed() {
    RegisteredMemory m = new RegisteredMemory(node, MIB, 4 * MIB, "test");
    RegisteredMemory.Block held = m.allocate(4096);
    m.close();
    assertEquals(MIB, m.arenaBytes(), "memory a reader holds must not vanish");
    held.free();
    assertEquals(0, m.arenaBytes());
    assertEquals(0, node.stats().registeredBytes());
  }
}
