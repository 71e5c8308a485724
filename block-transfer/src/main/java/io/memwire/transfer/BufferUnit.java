package io.memwire.transfer;

import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.memory.MemoryUnit;
import io.memwire.transfer.spi.ProviderRegistration;
import java.nio.ByteBuffer;

/**
 * Page-aligned direct memory owned as one unit of a node's allocator: from {@link
 * TransferNode#allocateRegistered} registered for remote reads as one {@link #region()}, from
 * {@link TransferNode#allocateDirect} not registered at all. The last {@link #release()} frees it:
 * a registered buffer's region is closed and the memory freed once the region is {@linkplain
 * MemoryRegion#released() released}, so the caller never frees anything itself.
 *
 * <p>Its bytes count in the allocator's {@link MemoryAllocator#registeredBytes()} (or {@link
 * MemoryAllocator#directBytes()}) until that last release, reserved against the allocator's limit
 * and every parent's.
 */
public final class BufferUnit {
  private final ByteBuffer memory;
  private final long address;
  private final MemoryUnit unit;
  private final MemoryRegion region;
  private final ProviderRegistration destination;

  BufferUnit(
      ByteBuffer memory,
      long address,
      MemoryUnit unit,
      MemoryRegion region,
      ProviderRegistration destination) {
    this.memory = memory;
    this.address = address;
    this.unit = unit;
    this.region = region;
    this.destination = destination;
  }

  /** A new view of the whole memory: position 0, limit {@link #size()}, big-endian. */
  public ByteBuffer buffer() {
    return memory.duplicate();
  }

  /** Native address of byte 0 (page aligned). */
  public long address() {
    return address;
  }

  public int size() {
    return memory.capacity();
  }

  /** The region peers read it through; null when it is not registered for remote reads. */
  public MemoryRegion region() {
    return region;
  }

  /** The unit on the allocator's books. */
  public MemoryUnit unit() {
    return unit;
  }

  /** Local key of a read-destination registration (the read pool's dedicated buffers). */
  long localKey() {
    return destination.localKey();
  }

  /** Adds a reference. */
  public BufferUnit retain() {
    unit.retain();
    return this;
  }

  /**
   * Drops a reference; the last one takes the memory off the books and frees it (closing the region
   * first, freeing once it is released).
   *
   * @return true when this was the last reference
   * @throws IllegalStateException when it was already released
   */
  public boolean release() {
    return unit.release();
  }

  @Override
  public String toString() {
    return "BufferUnit{" + unit + (region != null ? ", " + region : "") + "}";
  }
}
