package io.memwire.transfer;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.internal.MemoryAccess;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.memory.MemoryUnit;
import io.memwire.transfer.spi.ProviderRegistration;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Read destinations in direct memory registered once, not per read: the placement strategy of the
 * node's {@code read-pool} allocator. Size classes are powers of two from 4 KiB to 16 MiB, carved
 * out of slabs of at least 4 MiB; slabs stay registered until the node closes. Each slab is a
 * registered unit of the allocator's {@value #SLABS} child, whose limit is {@code poolMaxBytes}. A
 * request larger than the largest class, or one that would take the pool over that limit, gets a
 * dedicated buffer ({@link NodeBuffers#allocateDestination}) registered for that read and freed on
 * release. Every destination handed out is a {@link MemoryUnit} of the allocator; its last release
 * puts the piece back on its class's free list (or releases the dedicated buffer).
 *
 * <p>Growing (allocating and registering a slab or a dedicated buffer) is slow and, for verbs, a
 * system call: it never runs on a transport's I/O or completion thread. Those threads take only
 * what is free ({@link #tryAllocate}); whatever needs growth runs on the pool's own thread ({@link
 * #growOffIoThread}).
 */
public final class BufferPool {
  static final int MIN_CLASS_SHIFT = 12; // 4 KiB
  static final int MAX_CLASS_SHIFT = 24; // 16 MiB
  private static final int MIN_SLAB = 4 << 20;
  private static final AtomicInteger GROWER_IDS = new AtomicInteger();

  /** Name of the child of the pool's allocator that holds the slabs' registrations. */
  static final String SLABS = "slabs";

  /** One piece of registered memory a read can land in, owned through its unit. */
  static final class Slot {
    final ByteBuffer view;
    final long address;
    final long localKey;
    final MemoryUnit unit;

    Slot(ByteBuffer view, long address, long localKey, MemoryUnit unit) {
      this.view = view;
      this.address = address;
      this.localKey = localKey;
      this.unit = unit;
    }
  }

  private static final class Piece {
    final ByteBuffer memory;
    final long address;
    final long localKey;

    Piece(ByteBuffer memory, long address, long localKey) {
      this.memory = memory;
      this.address = address;
      this.localKey = localKey;
    }
  }

  private static final class Slab {
    final ByteBuffer memory;
    final ProviderRegistration registration;
    final MemoryUnit unit;

    /** The provider let go of the slab (set once, on its thread): freed once no unit is live. */
    volatile boolean quiesced;

    Slab(ByteBuffer memory, ProviderRegistration registration, MemoryUnit unit) {
      this.memory = memory;
      this.registration = registration;
      this.unit = unit;
    }
  }

  private final NodeMemory memory;
  private final MemoryAllocator allocator;
  private final MemoryAllocator slabUnits;

  @SuppressWarnings("unchecked")
  private final ConcurrentLinkedQueue<Piece>[] free =
      new ConcurrentLinkedQueue[MAX_CLASS_SHIFT - MIN_CLASS_SHIFT + 1];

  @GuardedBy("this")
  private final List<Slab> slabs = new ArrayList<>();

  /** Slabs deregistered at close, freed once no unit is live and the provider let go of them. */
  @GuardedBy("this")
  private final List<Slab> retired = new ArrayList<>();

  private final AtomicLong dedicatedAllocations = new AtomicLong();
  private volatile boolean closed;

  /** Where growth runs; one daemon thread, started on first use, ended by {@link #close}. */
  private final ExecutorService grower;

  BufferPool(NodeMemory memory, MemoryAllocator allocator, long maxBytes) {
    this.memory = memory;
    this.allocator = allocator;
    this.slabUnits = allocator.newChild(SLABS, maxBytes);
    int id = GROWER_IDS.incrementAndGet();
    this.grower =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "memwire-read-pool-" + id);
              t.setDaemon(true);
              return t;
            });
    for (int i = 0; i < free.length; i++) {
      free[i] = new ConcurrentLinkedQueue<>();
    }
  }

  /**
   * A slot of exactly {@code length} bytes (position 0, limit length), with a count of 1. May grow
   * the pool: call it off I/O threads (see {@link #growOffIoThread}).
   */
  Slot allocate(int length) {
    Slot s = tryAllocate(length);
    if (s != null) {
      return s;
    }
    int shift = shiftOf(length);
    if (shift > MAX_CLASS_SHIFT) {
      return dedicated(length);
    }
    Piece p = grow(shift - MIN_CLASS_SHIFT, shift);
    return p != null ? slot(shift - MIN_CLASS_SHIFT, p, length) : dedicated(length);
  }

  /**
   * A slot like {@link #allocate} when a pooled piece of the size is free now, else null (the pool
   * would have to grow, or the read needs a dedicated buffer). Never allocates or registers memory:
   * safe on an I/O thread.
   */
  Slot tryAllocate(int length) {
    if (closed) {
      throw new IllegalStateException("buffer pool is closed");
    }
    int shift = shiftOf(length);
    if (shift > MAX_CLASS_SHIFT) {
      return null;
    }
    int cls = shift - MIN_CLASS_SHIFT;
    Piece p = free[cls].poll();
    return p != null ? slot(cls, p, length) : null;
  }

  /**
   * Runs {@code task} on the pool's own thread, where {@link #allocate} may grow the pool. After
   * {@link #close} the task runs on the caller's thread ({@code allocate} then fails at once).
   */
  void growOffIoThread(Runnable task) {
    try {
      grower.execute(task);
    } catch (RejectedExecutionException closedPool) {
      task.run();
    }
  }

  private static int shiftOf(int length) {
    return Math.max(MIN_CLASS_SHIFT, 32 - Integer.numberOfLeadingZeros(length - 1));
  }

  private Slot slot(int cls, Piece piece, int length) {
    MemoryUnit unit;
    try {
      unit = allocator.allocate(length, "read destination", () -> recycle(cls, piece));
    } catch (IllegalStateException e) {
      free[cls].offer(piece);
      throw e;
    }
    ByteBuffer view = piece.memory.duplicate().clear().limit(length);
    return new Slot(view, piece.address, piece.localKey, unit);
  }

  TransferBuffer wrap(Slot slot, int length) {
    return new TransferBuffer(slot.view.duplicate(), slot.address, length, slot.unit);
  }

  private void recycle(int cls, Piece piece) {
    if (!closed) {
      free[cls].offer(piece);
    } else {
      freeRetired();
    }
  }

  private synchronized Piece grow(int cls, int shift) {
    Piece p = free[cls].poll();
    if (p != null || closed) {
      return p;
    }
    int pieceSize = 1 << shift;
    int slabSize = Math.max(pieceSize, MIN_SLAB);
    if (!slabUnits.withinLimit(slabSize)) {
      return null; // the pool is full (checked first: no exception on this common path)
    }
    Slab[] made = {null};
    MemoryUnit unit;
    try {
      unit =
          memory.reserve(
              slabUnits, slabSize, MemoryUnit.Kind.REGISTERED, "slab", () -> retire(made[0]));
    } catch (RegistrationException e) {
      return null; // budget exhausted by regions: a dedicated buffer will say so if it fails too
    }
    ByteBuffer slabMemory;
    try {
      slabMemory = ByteBuffer.allocateDirect(slabSize);
    } catch (OutOfMemoryError e) {
      unit.release(); // nothing made yet: only the reservation goes
      throw e;
    }
    long base = MemoryAccess.address(slabMemory);
    ProviderRegistration reg;
    try {
      reg = memory.registerDestination(slabMemory, base);
    } catch (RuntimeException e) {
      unit.release();
      MemoryAccess.free(slabMemory);
      if (e instanceof RegistrationException) {
        return null; // the provider refused: a dedicated buffer will say so if it fails too
      }
      throw e;
    }
    made[0] = new Slab(slabMemory, reg, unit);
    slabs.add(made[0]);
    Piece first = null;
    for (int off = 0; off < slabSize; off += pieceSize) {
      ByteBuffer slice = slabMemory.duplicate().position(off).limit(off + pieceSize).slice();
      Piece piece = new Piece(slice, base + off, reg.localKey());
      if (first == null) {
        first = piece;
      } else {
        free[cls].offer(piece);
      }
    }
    return first;
  }

  /** The free action of a slab's unit, released at close: deregister, free once quiesced. */
  private void retire(Slab s) {
    if (s == null) {
      return; // the registration failed: nothing was made
    }
    s.registration.deregister(
        () -> {
          s.quiesced = true;
          freeRetired();
        });
  }

  private Slot dedicated(int length) {
    dedicatedAllocations.incrementAndGet();
    BufferUnit d =
        memory.buffers().allocateDestination(allocator, length, "dedicated read destination");
    MemoryUnit unit;
    try {
      unit =
          allocator.allocate(
              length,
              "dedicated read destination",
              () -> {
                d.release();
                if (closed) {
                  freeRetired();
                }
              });
    } catch (IllegalStateException e) {
      d.release();
      throw e;
    }
    return new Slot(d.buffer(), d.address(), d.localKey(), unit);
  }

  /** The allocator whose books this pool's destinations are on. */
  public MemoryAllocator allocator() {
    return allocator;
  }

  /** Buffers handed out and not yet released. */
  public long outstandingBuffers() {
    return allocator.liveUnits();
  }

  /** Bytes of buffers handed out and not yet released. */
  public long outstandingBytes() {
    return allocator.allocatedBytes();
  }

  /** Bytes registered for pooled slabs. */
  public long slabBytes() {
    return slabUnits.registeredBytes();
  }

  /** Reads that needed a one-off registration (too large, or pool full). */
  public long dedicatedAllocations() {
    return dedicatedAllocations.get();
  }

  /**
   * Deregisters every slab and closes the allocator (buffers still outstanding are reported as a
   * leak). A slab is freed once the provider let go of it and no buffer is outstanding: a caller
   * still holding a view must not see its memory vanish.
   */
  synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    grower.shutdown(); // queued growths still run, and fail at once: the pool is closed
    for (Slab s : slabs) {
      retired.add(s);
      s.unit.release(); // off the books now; deregistered, freed once no view is live
    }
    slabs.clear();
    for (ConcurrentLinkedQueue<Piece> q : free) {
      q.clear();
    }
    allocator.close();
    freeRetired();
  }

  private synchronized void freeRetired() {
    if (allocator.liveUnits() > 0) {
      return;
    }
    for (Iterator<Slab> it = retired.iterator(); it.hasNext(); ) {
      Slab s = it.next();
      if (s.quiesced) {
        MemoryAccess.free(s.memory);
        it.remove();
      }
    }
  }
}
