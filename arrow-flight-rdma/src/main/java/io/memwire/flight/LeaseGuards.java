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
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Guard words that fence lease expiry against one-sided reads. Every lease gets a slot (8 bytes
 * of registered memory, never used for bodies) holding a generation no other lease of this
 * producer ever gets. Ending a lease, for any reason, first overwrites its slot with 0 and only
 * then frees the body, which may be reused at once. The client reads the slot <em>after</em> its
 * body reads have completed and drops the batch unless it finds the generation the descriptor
 * promised: then the lease was alive when the last body byte had been read, so no byte can come
 * from a later batch. Slots are recycled, generations are not, so a stale slot never matches.
 */
final class LeaseGuards implements AutoCloseable {
  static final int SLOT_BYTES = 8;
  private static final int PAGE_SLOTS = 512;
  private static final VarHandle WORD =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** One lease's guard: where its word lives and the value it holds while the lease lives. */
  static final class Guard {
    private final Page page;
    private final int offset;
    final long generation;

    Guard(Page page, int offset, long generation) {
      this.page = page;
      this.offset = offset;
      this.generation = generation;
    }

    MemoryRegion region() {
      return page.region;
    }

    long regionOffset() {
      return offset;
    }
  }

  private static final class Page {
    final ByteBuffer memory;
    final MemoryRegion region;

    Page(ByteBuffer memory, MemoryRegion region) {
      this.memory = memory;
      this.region = region;
    }
  }

  private final TransferNode node;
  private final List<Page> pages = new ArrayList<>();
  private final ArrayDeque<long[]> freeSlots = new ArrayDeque<>(); // {page index, offset}
  // Random start: a guard of a restarted producer at the same address never matches an old one.
  private final AtomicLong generations = new AtomicLong(new SecureRandom().nextLong());
  private boolean closed;

  LeaseGuards(TransferNode node) {
    this.node = node;
  }

  /** A slot set to a fresh generation. */
  synchronized Guard issue() {
    if (closed) {
      throw new IllegalStateException("lease guards are closed");
    }
    if (freeSlots.isEmpty()) {
      ByteBuffer m = ByteBuffer.allocateDirect(PAGE_SLOTS * SLOT_BYTES);
      MemoryRegion r;
      try {
        r = node.register(m);
      } catch (RuntimeException e) {
        MemoryAccess.free(m);
        throw e;
      }
      pages.add(new Page(m, r));
      for (int i = 0; i < PAGE_SLOTS; i++) {
        freeSlots.add(new long[] {pages.size() - 1, (long) i * SLOT_BYTES});
      }
    }
    long[] s = freeSlots.poll();
    long g;
    do {
      g = generations.incrementAndGet();
    } while (g == 0);
    Page p = pages.get((int) s[0]);
    WORD.setVolatile(p.memory, (int) s[1], g);
    return new Guard(p, (int) s[1], g);
  }

  /**
   * Ends a guard: after this returns, no read of its slot finds its generation, so the caller may
   * free the body. Call exactly once per guard, before freeing the body.
   */
  synchronized void revoke(Guard g) {
    if (closed) {
      return; // the page is deregistered: reads of it fail, and its memory may be gone
    }
    WORD.setVolatile(g.page.memory, g.offset, 0L);
    // The 0 must be visible to the NIC (or the tcp responder) before any store reusing the body.
    VarHandle.fullFence();
    freeSlots.add(new long[] {pages.indexOf(g.page), g.offset});
  }

  /** Deregisters the pages; their memory is freed once the transport no longer touches it. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (Page p : pages) {
      p.region.close();
      p.region.released().whenComplete((v, e) -> MemoryAccess.free(p.memory));
    }
    pages.clear();
    freeSlots.clear();
  }
}
