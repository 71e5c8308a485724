package io.memwire.transfer;

import io.memwire.transfer.spi.ProviderRegistration;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Read destinations in direct memory registered once, not per read. Size classes are powers of
 * two from 4 KiB to 16 MiB, carved out of slabs of at least 4 MiB; slabs stay registered until the
 * node closes, up to {@code poolMaxBytes}. A request larger than the largest class, or one that
 * would take the pool over its limit, gets a dedicated buffer that is registered for that read and
 * freed on release.
 */
public final class BufferPool {
  static final int MIN_CLASS_SHIFT = 12; // 4 KiB
  static final int MAX_CLASS_SHIFT = 24; // 16 MiB
  private static final int MIN_SLAB = 4 << 20;

  /** Registers destination memory with the provider, counting it against the budget. */
  interface Registrar {
    ProviderRegistration register(ByteBuffer buffer, long address);

    void unregister(ProviderRegistration registration, int length);
  }

  /** One piece of registered memory a read can land in. */
  static final class Slot {
    final ByteBuffer view;
    final long address;
    final long localKey;
    private final Runnable free;

    Slot(ByteBuffer view, long address, long localKey, Runnable free) {
      this.view = view;
      this.address = address;
      this.localKey = localKey;
      this.free = free;
    }

    void free() {
      free.run();
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

    Slab(ByteBuffer memory, ProviderRegistration registration) {
      this.memory = memory;
      this.registration = registration;
    }
  }

  private final Registrar registrar;
  private final long maxBytes;
  @SuppressWarnings("unchecked")
  private final ConcurrentLinkedQueue<Piece>[] free =
      new ConcurrentLinkedQueue[MAX_CLASS_SHIFT - MIN_CLASS_SHIFT + 1];
  private final List<Slab> slabs = new ArrayList<>();
  private final AtomicLong slabBytes = new AtomicLong();
  private final AtomicLong outstandingBuffers = new AtomicLong();
  private final AtomicLong outstandingBytes = new AtomicLong();
  private final AtomicLong dedicatedAllocations = new AtomicLong();
  private volatile boolean closed;

  BufferPool(Registrar registrar, long maxBytes) {
    this.registrar = registrar;
    this.maxBytes = maxBytes;
    for (int i = 0; i < free.length; i++) {
      free[i] = new ConcurrentLinkedQueue<>();
    }
  }

  /** A slot of exactly {@code length} bytes (position 0, limit length). */
  Slot allocate(int length) {
    if (closed) {
      throw new IllegalStateException("buffer pool is closed");
    }
    int shift = Math.max(MIN_CLASS_SHIFT, 32 - Integer.numberOfLeadingZeros(length - 1));
    Slot slot;
    if (shift > MAX_CLASS_SHIFT) {
      slot = dedicated(length);
    } else {
      int cls = shift - MIN_CLASS_SHIFT;
      Piece p = free[cls].poll();
      if (p == null) {
        p = grow(cls, shift);
      }
      if (p == null) {
        slot = dedicated(length);
      } else {
        Piece piece = p;
        ByteBuffer view = piece.memory.duplicate().clear().limit(length);
        slot = new Slot(view, piece.address, piece.localKey, () -> recycle(cls, piece, length));
      }
    }
    outstandingBuffers.incrementAndGet();
    outstandingBytes.addAndGet(length);
    return slot;
  }

  TransferBuffer wrap(Slot slot, int length) {
    return new TransferBuffer(slot.view.duplicate(), slot.address, length, slot::free);
  }

  private void recycle(int cls, Piece piece, int length) {
    outstandingBuffers.decrementAndGet();
    outstandingBytes.addAndGet(-length);
    free[cls].offer(piece);
  }

  private synchronized Piece grow(int cls, int shift) {
    Piece p = free[cls].poll();
    if (p != null || closed) {
      return p;
    }
    int pieceSize = 1 << shift;
    int slabSize = Math.max(pieceSize, MIN_SLAB);
    if (slabBytes.get() + slabSize > maxBytes) {
      return null;
    }
    ByteBuffer memory = ByteBuffer.allocateDirect(slabSize);
    long base = MemoryAccess.address(memory);
    ProviderRegistration reg;
    try {
      reg = registrar.register(memory, base);
    } catch (RegistrationException e) {
      MemoryAccess.free(memory);
      return null; // budget exhausted by regions: a dedicated buffer will say so if it fails too
    }
    slabs.add(new Slab(memory, reg));
    slabBytes.addAndGet(slabSize);
    Piece first = null;
    for (int off = 0; off < slabSize; off += pieceSize) {
      ByteBuffer slice = memory.duplicate().position(off).limit(off + pieceSize).slice();
      Piece piece = new Piece(slice, base + off, reg.localKey());
      if (first == null) {
        first = piece;
      } else {
        free[cls].offer(piece);
      }
    }
    return first;
  }

  private Slot dedicated(int length) {
    dedicatedAllocations.incrementAndGet();
    ByteBuffer memory = ByteBuffer.allocateDirect(length);
    long address = MemoryAccess.address(memory);
    ProviderRegistration reg;
    try {
      reg = registrar.register(memory, address);
    } catch (RuntimeException e) {
      MemoryAccess.free(memory);
      throw e;
    }
    return new Slot(memory, address, reg.localKey(), () -> {
      outstandingBuffers.decrementAndGet();
      outstandingBytes.addAndGet(-length);
      registrar.unregister(reg, length);
      reg.deregister(() -> MemoryAccess.free(memory));
    });
  }

  /** Buffers handed out and not yet released. */
  public long outstandingBuffers() {
    return outstandingBuffers.get();
  }

  /** Bytes of buffers handed out and not yet released. */
  public long outstandingBytes() {
    return outstandingBytes.get();
  }

  /** Bytes registered for pooled slabs. */
  public long slabBytes() {
    return slabBytes.get();
  }

  /** Reads that needed a one-off registration (too large, or pool full). */
  public long dedicatedAllocations() {
    return dedicatedAllocations.get();
  }

  /** Deregisters and frees every slab. Buffers still outstanding are a caller leak: logged by the node. */
  synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    // Freeing memory a caller still holds a view of would crash the JVM; leave such slabs to GC.
    boolean inUse = outstandingBuffers.get() > 0;
    for (Slab s : slabs) {
      registrar.unregister(s.registration, s.memory.capacity());
      s.registration.deregister(inUse ? () -> {} : () -> MemoryAccess.free(s.memory));
    }
    slabs.clear();
    slabBytes.set(0);
    for (ConcurrentLinkedQueue<Piece> q : free) {
      q.clear();
    }
  }
}
