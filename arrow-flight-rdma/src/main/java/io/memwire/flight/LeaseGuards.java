package io.memwire.flight;

import io.memwire.transfer.MemoryAccess;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.TransferNode;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Guard words that fence lease expiry against one-sided reads. Every lease gets a slot (8 bytes,
 * never used for bodies) holding a generation no other lease of this producer ever gets, and the
 * slot alone is registered as a region of its own (own remote key), closed when the lease ends:
 * a client reaches no other lease's guard. Ending a lease, for any reason, first overwrites its
 * slot with 0 and closes the slot's region, and only then ends the body's regions. The client
 * reads the slot <em>after</em> its body reads have completed and drops the batch unless it
 * finds the generation the descriptor promised (a read after the end fails outright): then the
 * lease was alive when the last body byte had been read. Slots are recycled once their region is
 * released, generations are not, so a stale slot never matches.
 */
final class LeaseGuards implements AutoCloseable {
  static final int SLOT_BYTES = 8;
  private static final int PAGE_SLOTS = 512;
  private static final VarHandle WORD =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** One lease's guard: where its word lives and the value it holds while the lease lives. */
  static final class Guard {
    private final int page;
    private final int offset;
    private final MemoryRegion region;
    final long generation;

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

    long regionOffset() {
      return 0;
    }
  }

  private final TransferNode node;
  private final List<ByteBuffer> pages = new ArrayList<>();
  private final ArrayDeque<int[]> freeSlots = new ArrayDeque<>(); // {page index, offset}
  private final Set<MemoryRegion> live = new HashSet<>();
  // Random start: a guard of a restarted producer at the same address never matches an old one.
  private final AtomicLong generations = new AtomicLong(new SecureRandom().nextLong());
  private boolean closed;

  LeaseGuards(TransferNode node) {
    this.node = node;
  }

  /** A slot set to a fresh generation, registered as its own region. */
  synchronized Guard issue() {
    if (closed) {
      throw new IllegalStateException("lease guards are closed");
    }
    if (freeSlots.isEmpty()) {
      pages.add(ByteBuffer.allocateDirect(PAGE_SLOTS * SLOT_BYTES));
      for (int i = 0; i < PAGE_SLOTS; i++) {
        freeSlots.add(new int[] {pages.size() - 1, i * SLOT_BYTES});
      }
    }
    int[] s = freeSlots.poll();
    long g;
    do {
      g = generations.incrementAndGet();
    } while (g == 0);
    ByteBuffer page = pages.get(s[0]);
    WORD.setVolatile(page, s[1], g);
    MemoryRegion r;
    try {
      r = node.register(page.duplicate().limit(s[1] + SLOT_BYTES).position(s[1]).slice());
    } catch (RuntimeException e) {
      WORD.setVolatile(page, s[1], 0L);
      freeSlots.add(s);
      throw e;
    }
    live.add(r);
    return new Guard(s[0], s[1], r, g);
  }

  /**
   * Ends a guard: after this returns, no read of its slot finds its generation (a read either
   * finds 0 or fails on the closed region), so the caller may end the body. Call exactly once per
   * guard, before ending the body.
   */
  synchronized void revoke(Guard g) {
    if (closed) {
      return; // close() closed the region; the page memory goes once it is released
    }
    WORD.setVolatile(pages.get(g.page), g.offset, 0L);
    // The 0 must be visible to the NIC (or the tcp responder) before any store reusing the body.
    VarHandle.fullFence();
    g.region.close();
    g.region.released().whenComplete((v, e) -> recycle(g));
  }

  private synchronized void recycle(Guard g) {
    live.remove(g.region);
    if (!closed) {
      freeSlots.add(new int[] {g.page, g.offset});
    }
  }

  /** Live guard regions; for tests. */
  synchronized int liveRegions() {
    return live.size();
  }

  /** Closes every slot's region; the pages are freed once the transport no longer reads them. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<CompletableFuture<Void>> released = new ArrayList<>();
    for (MemoryRegion r : new ArrayList<>(live)) {
      r.close();
      released.add(r.released());
    }
    List<ByteBuffer> mem = new ArrayList<>(pages);
    CompletableFuture.allOf(released.toArray(new CompletableFuture<?>[0]))
        .whenComplete((v, e) -> mem.forEach(MemoryAccess::free));
    pages.clear();
    freeSlots.clear();
  }
}
