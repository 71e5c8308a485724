package io.memwire.transfer.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class MemoryAllocatorTest {

  @Test
  void lastReleaseFreesOnceAndUpdatesTheBooks() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator pool = root.newChild("read-pool");
    AtomicInteger frees = new AtomicInteger();
    MemoryUnit u = pool.allocate(4096, "read destination", frees::incrementAndGet);
    assertEquals(1, u.refCnt());
    assertEquals(4096, pool.allocatedBytes());
    assertEquals(4096, root.allocatedBytes(), "the root's figures include its children");
    assertEquals(1, root.liveUnits());

    assertTrue(u.retain() == u);
    assertFalse(u.release(), "one reference left");
    assertEquals(0, frees.get());
    assertEquals(4096, pool.allocatedBytes());
    assertTrue(u.release(), "the last reference");
    assertEquals(1, frees.get());
    assertEquals(0, pool.allocatedBytes());
    assertEquals(0, root.allocatedBytes());
    assertEquals(0, root.liveUnits());
    root.close();
    assertTrue(root.leakReports().isEmpty(), root.leakReports().toString());
  }

  @Test
  void doubleReleaseAndRetainAfterReleaseFailNamingUnitAndAllocator() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator guards = root.newChild("flight-guards");
    AtomicInteger frees = new AtomicInteger();
    MemoryUnit u = guards.allocate(8, "guard slot", frees::incrementAndGet);
    u.release();
    IllegalStateException e = assertThrows(IllegalStateException.class, u::release);
    assertTrue(e.getMessage().contains("double release"), e.getMessage());
    assertTrue(e.getMessage().contains("guard slot"), e.getMessage());
    assertTrue(e.getMessage().contains("'node/flight-guards'"), e.getMessage());
    assertEquals(1, frees.get(), "freed exactly once");
    assertEquals(0, guards.allocatedBytes(), "the books are not decremented twice");
    IllegalStateException r = assertThrows(IllegalStateException.class, u::retain);
    assertTrue(r.getMessage().contains("retain of released unit"), r.getMessage());
    IllegalStateException use =
        assertThrows(IllegalStateException.class, () -> u.ensureLive("nioBuffer()"));
    assertTrue(use.getMessage().startsWith("nioBuffer() of released"), use.getMessage());
  }

  @Test
  void peakIsTheMostLiveAtOnceAtEveryLevel() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator a = root.newChild("a");
    MemoryAllocator b = root.newChild("b");
    MemoryUnit a1 = a.allocate(1000, "x", () -> {});
    MemoryUnit a2 = a.allocate(3000, "x", () -> {});
    a1.release();
    MemoryUnit b1 = b.allocate(500, "y", () -> {});
    a2.release();
    MemoryUnit a3 = a.allocate(2000, "x", () -> {});
    assertEquals(4000, a.peakBytes());
    assertEquals(500, b.peakBytes());
    assertEquals(4000, root.peakBytes(), "3000 + 500 live at most was 3500; 1000 + 3000 is 4000");
    assertEquals(2500, root.allocatedBytes());
    assertEquals(3, a.allocations());
    b1.release();
    a3.release();
    assertEquals(4000, root.peakBytes(), "the peak stays");
    root.close();
    assertTrue(root.leakReports().isEmpty());
  }

  @Test
  void closingAChildWithLiveUnitsReportsChildUnitsAndBytes() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator dir = root.newChild("shuffle-directory");
    AtomicInteger frees = new AtomicInteger();
    MemoryUnit kept =
        dir.allocate(262_144, "directory chunk 0 of shuffle 3", frees::incrementAndGet);
    MemoryUnit done = dir.allocate(100, "other", () -> {});
    done.release();
    dir.close();

    List<LeakReport> leaks = root.leakReports();
    assertEquals(1, leaks.size());
    LeakReport r = leaks.get(0);
    assertEquals("node/shuffle-directory", r.allocator());
    assertEquals(262_144, r.bytes());
    assertEquals(List.of(kept), r.units());
    String text = r.toString();
    assertTrue(
        text.contains("'node/shuffle-directory' closed with 1 live units (262144 bytes)"), text);
    assertTrue(text.contains("directory chunk 0 of shuffle 3"), text);
    assertTrue(text.contains(MemoryAllocator.STACKS_PROPERTY), "says how to get stacks: " + text);
    assertNull(kept.allocationStack(), "stacks are off by default");

    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> dir.allocate(1, "late", () -> {}));
    assertTrue(e.getMessage().contains("'node/shuffle-directory' is closed"), e.getMessage());
    assertTrue(
        root.toVerboseString().contains("directory chunk 0 of shuffle 3"),
        "a leaking child stays in the dump: " + root.toVerboseString());

    // A leaked unit stays valid; its late release frees it and clears the books.
    assertTrue(kept.release());
    assertEquals(1, frees.get());
    assertEquals(0, root.allocatedBytes());
  }

  @Test
  void allocationStacksWhenEnabledNameTheAllocatingMethod() {
    MemoryAllocator root = MemoryAllocator.root("node", true);
    MemoryAllocator arenas = root.newChild("flight-arenas");
    MemoryUnit u = allocateHere(arenas);
    assertNotNull(u.allocationStack());
    arenas.close();
    String text = root.leakReports().get(0).toString();
    assertTrue(text.contains("allocateHere"), text);
    assertTrue(text.contains(MemoryAllocatorTest.class.getName()), text);
    u.release();
  }

  @Test
  void stacksFollowTheSystemProperty() {
    String old = System.getProperty(MemoryAllocator.STACKS_PROPERTY);
    try {
      System.setProperty(MemoryAllocator.STACKS_PROPERTY, "true");
      assertTrue(MemoryAllocator.root("on").recordsStacks());
      System.clearProperty(MemoryAllocator.STACKS_PROPERTY);
      assertFalse(MemoryAllocator.root("off").recordsStacks(), "off by default");
      System.setProperty(MemoryAllocator.STACKS_PROPERTY, "yes");
      RuntimeException e = assertThrows(RuntimeException.class, () -> MemoryAllocator.root("bad"));
      assertTrue(e.getMessage().contains("memwire.memory.allocationStacks=yes"), e.getMessage());
    } finally {
      if (old == null) {
        System.clearProperty(MemoryAllocator.STACKS_PROPERTY);
      } else {
        System.setProperty(MemoryAllocator.STACKS_PROPERTY, old);
      }
    }
  }

  private static MemoryUnit allocateHere(MemoryAllocator a) {
    return a.allocate(1 << 20, "arena block", () -> {});
  }

  @Test
  void rootCloseClosesChildrenNewestFirstThenReportsItsOwn() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator first = root.newChild("first");
    MemoryAllocator second = root.newChild("second");
    MemoryAllocator clean = root.newChild("clean");
    MemoryUnit f = first.allocate(10, "f", () -> {});
    MemoryUnit s = second.allocate(20, "s", () -> {});
    MemoryUnit r = root.allocate(30, "r", () -> {});
    clean.allocate(5, "c", () -> {}).release();
    root.close();

    List<String> order = new ArrayList<>();
    for (LeakReport l : root.leakReports()) {
      order.add(l.allocator() + "=" + l.bytes());
    }
    assertEquals(List.of("node/second=20", "node/first=10", "node=30"), order);
    assertTrue(first.isClosed() && second.isClosed() && clean.isClosed());
    assertEquals(List.of(first, second), root.children(), "leaking children stay listed");
    assertThrows(IllegalStateException.class, () -> root.newChild("late"));
    f.release();
    s.release();
    r.release();
    assertEquals(0, root.allocatedBytes());
    assertEquals(0, root.liveUnits());
  }

  @Test
  void closeWhenReleasedClosesWithTheLastUnitAndTakesNoneMeanwhile() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator guards = root.newChild("flight-guards");
    List<String> order = new ArrayList<>();
    MemoryUnit page =
        guards.reserve(4096, MemoryUnit.Kind.DIRECT, "page", () -> order.add("page freed"));
    MemoryUnit slot = guards.allocate(8, "slot", () -> order.add("slot freed"));
    guards.closeWhenReleased();
    assertFalse(guards.isClosed(), "two units live");
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> guards.allocate(8, "late", () -> {}));
    assertTrue(e.getMessage().contains("'node/flight-guards' is closing"), e.getMessage());
    page.release();
    assertFalse(guards.isClosed(), "the slot is live");
    slot.release();
    assertTrue(guards.isClosed(), "closed by the last release");
    assertEquals(List.of("page freed", "slot freed"), order);
    assertEquals(0, guards.directBytes());
    assertEquals(List.of(), root.children(), "an empty closed child leaves its parent");
    MemoryAllocator empty = root.newChild("empty");
    empty.closeWhenReleased();
    assertTrue(empty.isClosed(), "nothing live: closed at once");
    root.close();
    assertTrue(root.leakReports().isEmpty(), root.leakReports().toString());
  }

  @Test
  void verboseDumpListsChildrenAndLiveUnits() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator pool = root.newChild("read-pool");
    root.newChild("flight-guards");
    MemoryUnit u = pool.allocate(4096, "read destination", () -> {});
    String dump = root.toVerboseString();
    assertTrue(dump.startsWith("allocator 'node': 4096 bytes in 1 units, peak 4096 bytes"), dump);
    assertTrue(dump.contains("  allocator 'read-pool': 4096 bytes in 1 units"), dump);
    assertTrue(dump.contains("  allocator 'flight-guards': 0 bytes in 0 units"), dump);
    assertTrue(
        dump.contains(
            "(read destination, 4096 bytes, refCnt=1) of allocator " + "'node/read-pool'"),
        dump);
    u.release();
    assertFalse(root.toVerboseString().contains("read destination"));
    root.close();
    assertTrue(root.leakReports().isEmpty());
  }

  @Test
  void untrackedUnitsCountReferencesOnNoBooks() {
    AtomicInteger last = new AtomicInteger();
    MemoryUnit u = MemoryUnit.untracked(100, "caller region", last::incrementAndGet);
    u.retain();
    assertFalse(u.release());
    assertTrue(u.release());
    assertEquals(1, last.get());
    assertThrows(IllegalStateException.class, u::release);
  }

  @Test
  void registeredAndDirectMemoryCountApartFromPiecesAtEveryLevel() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator dir = root.newChild("shuffle-directory");
    AtomicInteger frees = new AtomicInteger();
    MemoryUnit region =
        dir.reserve(256, MemoryUnit.Kind.REGISTERED, "chunk region", frees::incrementAndGet);
    MemoryUnit arena = dir.reserve(4096, MemoryUnit.Kind.DIRECT, "arena", frees::incrementAndGet);
    MemoryUnit chunk = dir.allocate(256, "chunk", frees::incrementAndGet);
    assertEquals(256, dir.registeredBytes());
    assertEquals(256, root.registeredBytes(), "the root's figures include its children");
    assertEquals(4096, dir.directBytes());
    assertEquals(256, dir.allocatedBytes(), "pieces only");
    assertEquals(1, dir.liveUnits(), "pieces only");
    assertTrue(dir.toVerboseString().contains("registered 256 bytes, direct 4096 bytes"));
    for (MemoryUnit u : List.of(region, arena, chunk)) {
      assertTrue(u.release());
    }
    assertEquals(3, frees.get());
    assertEquals(0, root.registeredBytes());
    assertEquals(0, root.directBytes());
    assertEquals(0, root.allocatedBytes());
    root.close();
    assertTrue(root.leakReports().isEmpty(), root.leakReports().toString());
  }

  @Test
  void aReservationPastAnyLimitUpTheParentsFailsWithNothingReserved() {
    MemoryAllocator root = MemoryAllocator.root("node", 1000, false);
    MemoryAllocator flight = root.newChild("flight", 800);
    MemoryAllocator arenas = flight.newChild("arenas");
    MemoryAllocator other = root.newChild("other");
    MemoryUnit held = arenas.reserve(600, MemoryUnit.Kind.REGISTERED, "arena", () -> {});

    LimitExceededException e =
        assertThrows(
            LimitExceededException.class,
            () -> arenas.reserve(300, MemoryUnit.Kind.REGISTERED, "arena", () -> {}));
    assertSame(flight, e.allocator(), "the parent's limit refused");
    assertEquals(600, e.reserved());
    assertEquals(300, e.requested());
    assertEquals(800, e.limit());
    assertTrue(e.getMessage().contains("'node/flight'"), e.getMessage());
    assertEquals(600, arenas.registeredBytes(), "the child's share was rolled back");
    assertEquals(600, flight.registeredBytes());
    assertEquals(600, root.registeredBytes());

    LimitExceededException atRoot =
        assertThrows(
            LimitExceededException.class,
            () -> other.reserve(500, MemoryUnit.Kind.REGISTERED, "region", () -> {}));
    assertSame(root, atRoot.allocator());
    assertEquals(0, other.registeredBytes(), "rolled back below the root");
    assertEquals(600, root.registeredBytes());
    assertTrue(other.withinLimit(500), "the child itself has no limit");
    assertFalse(flight.withinLimit(201));

    // The root's limit is on registered bytes: unregistered direct memory does not use it.
    MemoryUnit direct = other.reserve(900, MemoryUnit.Kind.DIRECT, "arena", () -> {});
    assertEquals(900, root.directBytes());
    assertThrows(
        LimitExceededException.class,
        () -> arenas.reserve(300, MemoryUnit.Kind.DIRECT, "arena", () -> {}),
        "a child's limit caps its direct bytes too");
    assertEquals(0, arenas.directBytes());

    held.release();
    direct.release();
    MemoryUnit fits = arenas.reserve(800, MemoryUnit.Kind.REGISTERED, "arena", () -> {});
    fits.release();
    root.close();
    assertTrue(root.leakReports().isEmpty(), root.leakReports().toString());
    assertEquals(0, root.registeredBytes());
  }

  @Test
  void leakReportsTellPiecesFromTheMemoryUnderThem() {
    MemoryAllocator root = MemoryAllocator.root("node", false);
    MemoryAllocator landing = root.newChild("landing");
    MemoryUnit arena = landing.reserve(1 << 20, MemoryUnit.Kind.REGISTERED, "arena", () -> {});
    MemoryUnit block = landing.allocate(4096, "block", () -> {});
    landing.close();
    LeakReport r = root.leakReports().get(0);
    assertEquals(4096, r.bytes());
    assertEquals(1 << 20, r.reservedBytes());
    assertEquals(List.of(arena, block), r.units());
    block.release();
    arena.release();
    assertEquals(0, root.registeredBytes());
  }
}
