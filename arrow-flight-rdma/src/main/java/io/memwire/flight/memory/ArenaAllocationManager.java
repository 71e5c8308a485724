package io.memwire.flight.memory;

import java.nio.ByteBuffer;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.memory.util.MemoryUtil;

/**
 * Arrow memory carved from {@link ArenaMemory}: vectors allocated through a root allocator built
 * with {@link ArenaMemory#allocationManagerFactory()} can be read remotely in place, so a zero-copy
 * producer's batches are leased without a copy (each lease registers the slices its buffers
 * occupy).
 */
final class ArenaAllocationManager extends AllocationManager {
  private final ArenaMemory.Block block;
  private final long size;

  private ArenaAllocationManager(BufferAllocator accounting, ArenaMemory.Block block, long size) {
    super(accounting);
    this.block = block;
    this.size = size;
  }

  @Override
  public long getSize() {
    return size;
  }

  @Override
  protected long memoryAddress() {
    return block.address();
  }

  @Override
  protected void release0() {
    block.release();
  }

  /** Creates managers over one {@link ArenaMemory}. */
  static final class Factory implements AllocationManager.Factory {
    /** Backing for the zero-length buffer every allocator hands out; never written. */
    private static final ByteBuffer EMPTY_MEMORY = ByteBuffer.allocateDirect(8);

    private static final ArrowBuf EMPTY =
        new ArrowBuf(
            ReferenceManager.NO_OP, null, 0, MemoryUtil.getByteBufferAddress(EMPTY_MEMORY));

    private final ArenaMemory memory;

    Factory(ArenaMemory memory) {
      this.memory = memory;
    }

    @Override
    public AllocationManager create(BufferAllocator accountingAllocator, long size) {
      ArenaMemory.Block b = memory.tryAllocate(size);
      if (b == null) {
        throw new OutOfMemoryException(
            "registered memory exhausted: "
                + size
                + " bytes requested, "
                + memory.allocatedBytesNow()
                + " of "
                + memory.maxBytes()
                + " in use");
      }
      // Zeroed: the block may have held another client's batch, and bytes a producer never
      // writes (null slots, padding) are leased with the rest.
      org.apache.arrow.memory.util.MemoryUtil.setMemory(b.address(), size, (byte) 0);
      return new ArenaAllocationManager(accountingAllocator, b, size);
    }

    @Override
    public ArrowBuf empty() {
      return EMPTY;
    }
  }
}
