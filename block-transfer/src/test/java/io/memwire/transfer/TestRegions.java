package io.memwire.transfer;

import java.nio.ByteBuffer;

/**
 * Tests' regions over their own {@code ByteBuffer.allocateDirect} buffers, registered in place on
 * the node's root. The garbage collector frees such a buffer once it is unreachable, and a region
 * keeps it reachable while registered, so the region owns no release action: nothing is left to the
 * test to free.
 */
public final class TestRegions {
  private TestRegions() {}

  /** Registers a garbage-collected direct buffer's remaining bytes on {@code node}'s root. */
  public static MemoryRegion register(TransferNode node, ByteBuffer gcOwned) {
    return node.register(gcOwned, node.memory(), () -> {});
  }
}
