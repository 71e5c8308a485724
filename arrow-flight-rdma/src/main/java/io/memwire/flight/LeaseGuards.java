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
 * <p>Pages are the placement strategy of the node's {@value #ALLOCATOR} allocator: each page is a
 * direct unit of it ({@link Registrar#allocateDirect}), each slot's region a registered one, and
 * each guard a unit released once its region is released (by {@link #revoke} or {@link #close}),
 * which puts the slot back on the free list. Pages are released at close, after every guard region
 * is released.
 */
final class LeaseGuards implements AutoCloseable {
  static final int SLOT_BYTES = 8;
  private static final int PAGE_SLOTS = 512;

  /** Name of the guards' child of the node's registered-memory root. */
  static final String ALLOCATOR = "flight-guards";

  private static final VarHandle WORD =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** One lease's guard: where its word lives and the value it holds while the lease lives. */
  static final class Guard {
    private final int page;
    private final int offset;
    private final MemoryRegion region;
    final long generation;
    private MemoryUnit unit;

    /** Set (under the guards' lock) once its end began: revoked, or closed with the guards. */
    private boolean ended;

    Guard(int page, int offset, MemoryRegion region, long generation) {
      this.page = page;
      this.offset = offset;
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

  @GuardedBy("this")
  private final List<BufferUnit> pages = new ArrayList<>();

  @GuardedBy("this")
  private final ArrayDeque<int[]> freeSlots = new ArrayDeque<>(); // {page index, offset}

  @GuardedBy("this")
  private final Map<MemoryRegion, Guard> live = new LinkedHashMap<>();

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
      pages.add(node.allocateDirect(allocator, PAGE_SLOTS * SLOT_BYTES, "guard page"));
      for (int i = 0; i < PAGE_SLOTS; i++) {
        freeSlots.add(new int[] {pages.size() - 1, i * SLOT_BYTES});
      }
    }
    int[] s = freeSlots.poll();
    long g;
    do {
      g = generations.incrementAndGet();
    } while (g == 0);
    ByteBuffer page = pages.get(s[0]).buffer();
    WORD.setVolatile(page, s[1], g);
    MemoryRegion r;
    try {
      // The page is freed by close() once every guard region is released.
      r = node.register(page.limit(s[1] + SLOT_BYTES).position(s[1]).slice(), allocator, () -> {});
    } catch (RuntimeException e) {
      WORD.setVolatile(page, s[1], 0L);
      freeSlots.add(s);
      throw e;
    }
    Guard guard = new Guard(s[0], s[1], r, g);
    guard.unit =
        allocator.allocate(SLOT_BYTES, "lease guard, generation " + g, () -> recycle(guard));
    live.put(r, guard);
    return guard;
  }

  /**
   * Ends a guard: after this returns, no read of its slot finds its generation (a read either finds
   * 0 or fails on the closed region), so the caller may end the body. Call exactly once per guard,
   * before ending the body.
   */
  synchronized void revoke(Guard g) {
    if (g.ended) {
      return; // close() ended it already; its unit goes once the region is released
    }
    g.ended = true;
    WORD.setVolatile(pages.get(g.page).buffer(), g.offset, 0L);
    // The 0 must be visible to the NIC (or the tcp responder) before any store reusing the body.
    VarHandle.fullFence();
    g.region.close();
    g.region.whenReleased(g.unit::release);
  }

  /** The free action of a guard's unit: its region is released, the slot may be reused. */
  private void recycle(Guard g) {
    boolean last;
    synchronized (this) {
      live.remove(g.region);
      if (!closed) {
        freeSlots.add(new int[] {g.page, g.offset});
      }
      last = closed && live.isEmpty();
    }
    if (last) {
      freePagesAndBooks();
    }
  }

  /** After close, once no guard is live: nothing reads the pages any more. */
  private void freePagesAndBooks() {
    List<BufferUnit> toFree;
    synchronized (this) {
      toFree = new ArrayList<>(pages);
      pages.clear();
    }
    toFree.forEach(BufferUnit::release);
    allocator.close();
  }

  /** Live guard regions; for tests. */
  synchronized int liveRegions() {
    return live.size();
  }

  /** The guards' allocator: one 8-byte unit per live guard. */
  MemoryAllocator allocator() {
    return allocator;
  }

  /**
   * Ends every live guard (zeroes its word, closes its region); once all their regions are released
   * the pages are freed (the transport no longer reads them) and the allocator is closed.
   * Idempotent.
   */
  @Override
  public void close() {
    List<Guard> ending = new ArrayList<>();
    boolean none;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      freeSlots.clear();
      for (Guard g : live.values()) {
        if (!g.ended) {
          g.ended = true;
          WORD.setVolatile(pages.get(g.page).buffer(), g.offset, 0L);
          ending.add(g);
        }
      }
      VarHandle.fullFence();
      none = live.isEmpty();
    }
    if (none) {
      freePagesAndBooks();
      return;
    }
    // The last guard's release (recycle) frees the pages and closes the books.
    for (Guard g : ending) {
      g.region.close();
      g.region.whenReleased(g.unit::release);
    }
  }
}
