package io.memwire.flight;

import io.memwire.flight.memory.ArenaMemory;
import org.apache.arrow.memory.ForeignAllocation;

/** A registered block seen by Arrow as a foreign allocation: freed when Arrow releases it. */
final class BlockAllocation extends ForeignAllocation {
  private final ArenaMemory.Block block;

  BlockAllocation(ArenaMemory.Block block, long size) {
    super(size, block.address());
    this.block = block;
  }

  @Override
  protected void release0() {
    block.release();
  }
}
