package io.memwire.flight.memory;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One arena and its free extents, indexed by offset (to merge neighbours on free) and by size (best
 * fit: the smallest extent that holds the block, lowest offset first). Not thread-safe: its {@link
 * ArenaMemory} changes it only under its own lock.
 */
final class Arena {
  final BufferUnit unit;
  final ByteBuffer memory;
  final long base;
  final MemoryRegion region;
  final boolean dedicated;

  /** Free extents: offset to length. */
  final TreeMap<Long, Long> freeByOffset;

  /** The same extents as {length, offset} pairs, ordered by length then offset. */
  final TreeSet<long[]> freeBySize;

  long used;

  Arena(BufferUnit unit, boolean shared) {
    this.unit = unit;
    this.memory = unit.buffer();
    this.base = unit.address();
    this.region = unit.region();
    this.dedicated = !shared;
    if (dedicated) {
      this.freeByOffset = null;
      this.freeBySize = null;
    } else {
      this.freeByOffset = new TreeMap<>();
      this.freeBySize =
          new TreeSet<>(
              (x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
      addFree(0, memory.capacity());
    }
  }

  ByteBuffer slice(long off, long length) {
    return memory.duplicate().limit((int) (off + length)).position((int) off).slice();
  }

  /** Offset of a free range of {@code bytes} (a multiple of the unit); -1 when none fits. */
  long alloc(long bytes) {
    long[] fit = freeBySize.ceiling(new long[] {bytes, -1});
    if (fit == null) {
      return -1;
    }
    long off = fit[1];
    long len = fit[0];
    removeFree(off, len);
    if (len > bytes) {
      addFree(off + bytes, len - bytes);
    }
    return off;
  }

  void release(long off, long bytes) {
    long len = bytes;
    Map.Entry<Long, Long> before = freeByOffset.floorEntry(off);
    if (before != null && before.getKey() + before.getValue() == off) {
      removeFree(before.getKey(), before.getValue());
      off = before.getKey();
      len += before.getValue();
    }
    Long after = freeByOffset.get(off + len);
    if (after != null) {
      removeFree(off + len, after);
      len += after;
    }
    addFree(off, len);
  }

  private void addFree(long off, long len) {
    freeByOffset.put(off, len);
    freeBySize.add(new long[] {len, off});
  }

  private void removeFree(long off, long len) {
    freeByOffset.remove(off);
    freeBySize.remove(new long[] {len, off});
  }

  /** Free extents: merged neighbours show as one. */
  int freeExtents() {
    return freeByOffset == null ? 0 : freeByOffset.size();
  }
}
