package io.memwire.transfer.memory;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One entry on a {@link MemoryAllocator}'s books, of one of three {@linkplain Kind kinds}: a piece
 * a consumer hands out (a read destination, a directory chunk, an arena block, a guard slot), a
 * registration (a region, a pool slab: memory the transport serves or writes), or direct memory
 * that is not registered (an arena whose slices are registered one by one). It starts with a
 * reference count of 1; {@link #retain()} adds one, {@link #release()} drops one, and the release
 * that reaches zero takes the unit off its allocator's books and runs the strategy's free action
 * exactly once. Retaining or releasing a unit whose count is already zero raises {@link
 * IllegalStateException} naming the unit and its allocator.
 */
public final class MemoryUnit {
  private static final AtomicLong IDS = new AtomicLong();

  /** What a unit's bytes are, and so which of its allocator's figures they count in. */
  public enum Kind {
    /**
     * A piece handed out by a consumer's strategy, carved from memory the consumer owns: counted in
     * {@link MemoryAllocator#allocatedBytes()}.
     */
    PIECE,
    /**
     * Memory registered with the transport: counted in {@link MemoryAllocator#registeredBytes()}
     * and reserved against every limit up to the root.
     */
    REGISTERED,
    /**
     * Direct memory that is not registered as a whole: counted in {@link
     * MemoryAllocator#directBytes()} and reserved against every limit below the root (the root's
     * limit is the registration budget).
     */
    DIRECT
  }

  private final long id = IDS.incrementAndGet();
  private final MemoryAllocator allocator;
  private final long size;
  private final Kind kind;
  private final String what;
  private final Runnable free;
  private final Throwable allocatedAt;
  private final AtomicInteger refCnt = new AtomicInteger(1);
  private volatile Object owner;

  MemoryUnit(
      MemoryAllocator allocator,
      long size,
      Kind kind,
      String what,
      Runnable free,
      Throwable allocatedAt) {
    this.allocator = allocator;
    this.size = size;
    this.kind = kind;
    this.what = what;
    this.free = free;
    this.allocatedAt = allocatedAt;
  }

  /**
   * A unit over memory its caller owns and frees itself (say a registered region passed as a read
   * destination): reference counted like any other, on no allocator's books; {@code onLast} runs at
   * the last release.
   */
  public static MemoryUnit untracked(long size, String what, Runnable onLast) {
    return new MemoryUnit(null, size, Kind.PIECE, what, onLast, null);
  }

  /** Bytes this unit accounts for. */
  public long size() {
    return size;
  }

  /** Which figures the unit counts in. */
  public Kind kind() {
    return kind;
  }

  /** What the unit holds, as given at allocation (shown in dumps and leak reports). */
  public String what() {
    return what;
  }

  /** The allocator whose books it is on; null for an {@link #untracked} unit. */
  public MemoryAllocator allocator() {
    return allocator;
  }

  /**
   * The object that owns this unit's memory and closes it (a transfer node's region), as set by
   * {@link #ownedBy}; null when none was set.
   */
  public Object owner() {
    return owner;
  }

  /**
   * Names the object that owns this unit's memory, so whoever walks the books (a node closing every
   * region) finds it. Set once, right after allocation.
   */
  public MemoryUnit ownedBy(Object o) {
    this.owner = o;
    return this;
  }

  /** Where it was allocated, when allocation stacks are on; else null. */
  public Throwable allocationStack() {
    return allocatedAt;
  }

  public int refCnt() {
    return refCnt.get();
  }

  /** Adds a reference. */
  public MemoryUnit retain() {
    int c;
    do {
      c = refCnt.get();
      if (c <= 0) {
        throw new IllegalStateException("retain of released " + this);
      }
    } while (!refCnt.compareAndSet(c, c + 1));
    return this;
  }

  /**
   * Drops a reference; at zero the unit leaves its allocator's books and its memory is freed (by
   * the strategy that placed it: back to a free list, or deregistered and freed).
   *
   * @return true when this was the last reference
   * @throws IllegalStateException when the unit was already released to zero
   */
  public boolean release() {
    int c;
    do {
      c = refCnt.get();
      if (c <= 0) {
        throw new IllegalStateException(
            "double release of " + this + ": released more often than retained");
      }
    } while (!refCnt.compareAndSet(c, c - 1));
    if (c > 1) {
      return false;
    }
    if (allocator != null) {
      allocator.unitFreed(this);
    }
    free.run();
    return true;
  }

  /** Throws unless the unit is still referenced; {@code use} names the attempted use. */
  public void ensureLive(String use) {
    if (refCnt.get() <= 0) {
      throw new IllegalStateException(use + " of released " + this);
    }
  }

  long id() {
    return id;
  }

  @Override
  public String toString() {
    return "unit #"
        + id
        + " ("
        + what
        + ", "
        + size
        + (kind == Kind.PIECE ? "" : " " + kind.name().toLowerCase(Locale.ROOT))
        + " bytes, refCnt="
        + refCnt.get()
        + ") of "
        + (allocator == null ? "no allocator" : "allocator '" + allocator.path() + "'");
  }
}
