package io.memwire.flight;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.memory.MemoryUnit;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Guard words that fence lease expiry against one-sided reads. Every lease gets a slot (8 bytes,
 * never used for bodies) holding a generation no other lease of this producer ever gets, and the
 * slot alone is registered as a region of its own (own remote key), closed when the lease ends: a
 * client reaches no other lease's guard. Ending a lease, for any reason, first overwrites its slot
 * with 0 and closes the slot's region, and only then ends the body's regions. The client reads the
 * slot <em>after</em> its body reads have completed and drops the batch unless it finds the
 * generation the descriptor promised (a read after the end fails outright): then the lease was
 * alive when the last body byte had been read. Slots are recycled once their region is released,
 * generations are not, so a stale slot never matches.
 *
 * <p>Pages are the placement strategy of the node's {@value #ALLOCATOR} allocator, and the order in
 * which things are given back follows references on its books, not code here: each page is a direct
 * unit of it ({@link Registrar#allocateDirect}) that the guards hold one reference on until {@link
 * #close}; each guard is an 8-byte unit holding a reference on its page; and each slot's region (a
 * registered unit) owns its guard: the region's release gives the guard back, which puts the slot
 * back on the free list and drops the page's reference. So a page is freed only after every region
 * on it is released, and the allocator closes with its last unit ({@link
 * MemoryAllocator#closeWhenReleased}).
 */
final class LeaseGuards implements AutoCloseable {
  static final int SLOT_BYTES = 8;
  private static final int PAGE_SLOTS = 512;

  /** Name of the guards' child of the node's registered-memory root. */
  static final String ALLOCATOR = "flight-guards";

  private static final VarHandle WORD =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** An 8-byte slot of a page. */
  private record Slot(BufferUnit page, int offset) {}

  /** One lease's guard: where its word lives and the value it holds while the lease lives. */
  static final class Guard {
    private final Slot slot;
    private final MemoryRegion region;
    final long generation;

    /** Set (under the guards' lock) once its end began: revoked, or closed with the guards. */
    private boolean ended;

    Guard(Slot slot, MemoryRegion region, long generation) {
      this.slot = slot;
      this.region = region;
      this.generation = generation;
    }

    /** The slot's own region (the word is at offset 0). */
    MemoryRegion region() {
      return region;
    }
  }

  private final Registrar node;
  private final MemoryAllocator allocator;

  /** The pages, each with the guards' own reference on it (dropped at close). */
  @GuardedBy("this")
  private final List<BufferUnit> pages = new ArrayList<>();

  @GuardedBy("this")
  private final ArrayDeque<Slot> freeSlots = new ArrayDeque<>();

  @GuardedBy("this")
  private final Map<Slot, Guard> live = new LinkedHashMap<>();

  // Random start: a guard of a restarted producer at the same address never matches an old one.
  private final AtomicLong generations = new AtomicLong(new SecureRandom().nextLong());

  @GuardedBy("this")
  private boolean closed;

  LeaseGuards(Registrar node) {
    this.node = node;
    this.allocator = node.memory().newChild(ALLOCATOR);
  }

  /** A slot set to a fresh generation, registered as its own region. */
  synchronized Guard issue() {
    if (closed) {
      throw new IllegalStateException("lease guards are closed");
    }
    if (freeSlots.isEmpty()) {
      BufferUnit page = node.allocateDirect(allocator, PAGE_SLOTS * SLOT_BYTES, "guard page");
      pages.add(page);
      for (int i = 0; i < PAGE_SLOTS; i++) {
        freeSlots.add(new Slot(page, i * SLOT_BYTES));
      }
    }
    Slot s = freeSlots.poll();
    long g;
    do {
      g = generations.incrementAndGet();
    } while (g == 0);
    ByteBuffer page = s.page().buffer();
    WORD.setVolatile(page, s.offset(), g);
    MemoryUnit unit = allocator.allocate(SLOT_BYTES, "lease guard, generation " + g, () -> end(s));
    s.page().retain(); // the guard's reference, dropped by end(s)
    // The region owns the guard: its release gives the guard back (at once if this fails).
    MemoryRegion r =
        node.register(
            page.limit(s.offset() + SLOT_BYTES).position(s.offset()).slice(),
            allocator,
            unit::release);
    Guard guard = new Guard(s, r, g);
    live.put(s, guard);
    return guard;
  }

  /**
   * Ends a guard: after this returns, no read of its slot finds its generation (a read either finds
   * 0 or fails on the closed region), so the caller may end the body. Call exactly once per guard,
   * before ending the body.
   */
  synchronized void revoke(Guard g) {
    if (g.ended) {
      return; // close() ended it already
    }
    g.ended = true;
    WORD.setVolatile(g.slot.page().buffer(), g.slot.offset(), 0L);
    // The 0 must be visible to the NIC (or the tcp responder) before any store reusing the body.
    VarHandle.fullFence();
    g.region.close();
  }

  /**
   * The free action of a guard's unit, run once its region is released (or failed to register): the
   * slot may be reused, and the guard's reference on its page goes.
   */
  private void end(Slot s) {
    synchronized (this) {
      live.remove(s);
      WORD.setVolatile(s.page().buffer(), s.offset(), 0L); // already 0 unless registering failed
      if (!closed) {
        freeSlots.add(s);
      }
    }
    s.page().release();
  }

  /** Live guard regions (the producer's {@code leaseGuards} gauge). */
  synchronized int liveRegions() {
    return live.size();
  }

  /** The guards' allocator: one 8-byte unit per live guard. */
  MemoryAllocator allocator() {
    return allocator;
  }

  /**
   * Ends every live guard (zeroes its word, closes its region) and drops the guards' references on
   * their pages: each page is freed once the last region on it is released (the transport no longer
   * reads it), and the allocator closes with its last unit. Idempotent.
   */
  @Override
  public void close() {
    List<Guard> ending = new ArrayList<>();
    List<BufferUnit> held;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      freeSlots.clear();
      for (Guard g : live.values()) {
        if (!g.ended) {
          g.ended = true;
          WORD.setVolatile(g.slot.page().buffer(), g.slot.offset(), 0L);
          ending.add(g);
        }
      }
      VarHandle.fullFence();
      held = new ArrayList<>(pages);
      pages.clear();
    }
    ending.forEach(g -> g.region.close());
    held.forEach(BufferUnit::release);
    allocator.closeWhenReleased();
  }
}
