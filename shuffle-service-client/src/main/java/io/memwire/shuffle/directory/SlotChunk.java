package io.memwire.shuffle.directory;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.memory.MemoryUnit;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One chunk of a shuffle's directory slots: registered direct memory reducers read slots from, the
 * pointer that names it in MapStatus locations, and the directory's unit of it. The directory holds
 * one reference until the shuffle is released ({@link #close}); a publish writing a slot holds one
 * more meanwhile. The last release gives the memory back, which the node frees once no read still
 * copies from it.
 *
 * @param memory the chunk's bytes, big-endian, where slots are written
 * @param region the chunk's registered region
 * @param pointer what reducers are given to find slots in this chunk
 * @param unit the directory's reference to the chunk's memory
 */
record SlotChunk(
    ByteBuffer memory, MemoryRegion region, DirectoryPointer pointer, MemoryUnit unit) {

  /**
   * Registers chunk {@code chunkIndex} of a shuffle laid out with {@code entries} inline entries
   * per slot ({@code checksums}: room for them), as a unit of {@code allocator}.
   *
   * @throws io.memwire.transfer.RegistrationException when a limit on the way has no room for it
   */
  static SlotChunk register(
      Registrar node,
      MemoryAllocator allocator,
      int shuffleId,
      int chunkIndex,
      int entries,
      boolean checksums) {
    int size =
        ChunkLayout.slotsPerChunk(entries, checksums) * ChunkLayout.stride(entries, checksums);
    String what = "chunk " + chunkIndex + " of shuffle " + shuffleId;
    BufferUnit registered = node.allocateRegistered(allocator, size, what);
    MemoryUnit unit;
    try {
      unit = allocator.allocate(size, what, registered::release);
    } catch (RuntimeException e) {
      registered.release();
      throw e;
    }
    MemoryRegion region = registered.region();
    return new SlotChunk(
        registered.buffer().order(ByteOrder.BIG_ENDIAN),
        region,
        new DirectoryPointer(chunkIndex, entries, checksums, region.remote()),
        unit);
  }

  /** Closes the region (reads from now on fail) and drops the directory's reference. */
  void close() {
    region.close();
    unit.release(); // a publish still writing holds its own reference
  }
}
