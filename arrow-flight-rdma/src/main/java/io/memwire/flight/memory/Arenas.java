package io.memwire.flight.memory;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.memory.MemoryAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The arenas of one {@link ArenaMemory}: makes new ones on its allocator, finds the arena an
 * address lies in, takes block extents back and drops arenas no block uses any more. Not
 * thread-safe: its {@link ArenaMemory} calls every method under its own lock.
 */
final class Arenas {
  // Logs under ArenaMemory's name: these lines are about that memory.
  private static final Logger LOG = LoggerFactory.getLogger(ArenaMemory.class);

  private final Registrar node;
  private final MemoryAllocator allocator;
  private final String name;
  private final boolean registerArenas;
  private final List<Arena> arenas = new ArrayList<>();
  private final TreeMap<Long, Arena> byAddress = new TreeMap<>();
  private long arenaBytes;

  Arenas(Registrar node, MemoryAllocator allocator, String name, boolean registerArenas) {
    this.node = node;
    this.allocator = allocator;
    this.name = name;
    this.registerArenas = registerArenas;
  }

  /** All arenas, oldest first (the live list: do not change it). */
  List<Arena> all() {
    return arenas;
  }

  /** A new arena of {@code size} bytes; shared ones hand out blocks, dedicated ones hold one. */
  Arena create(long size, boolean shared) {
    // Page-aligned, so every block is aligned to the unit (and bodies start on a page). Only this
    // memory reserves on its allocator, under its lock: the limit it checked still holds.
    String what = (shared ? "arena of " : "dedicated arena of ") + name;
    BufferUnit memory =
        registerArenas
            ? node.allocateRegistered(allocator, (int) size, what)
            : node.allocateDirect(allocator, (int) size, what);
    Arena a = new Arena(memory, shared);
    arenas.add(a);
    byAddress.put(a.base, a);
    arenaBytes += size;
    LOG.debug("{}: new arena of {} bytes ({} in {} arenas)", name, size, arenaBytes, arenas.size());
    return a;
  }

  /**
   * Returns a block's extent to its arena; drops the arena when it was dedicated to the block, or
   * when the memory is closed and the arena is now unused.
   */
  void giveBack(Arena a, long offset, long size, boolean closed) {
    if (!a.dedicated) {
      a.release(offset, size);
    }
    a.used -= size;
    if (a.dedicated || (closed && a.used == 0)) {
      drop(a);
    }
  }

  /** Drops every arena no block is using. */
  void dropUnused() {
    for (Arena a : new ArrayList<>(arenas)) {
      if (a.used == 0) {
        drop(a);
      }
    }
  }

  private void drop(Arena a) {
    arenas.remove(a);
    byAddress.remove(a.base);
    arenaBytes -= a.memory.capacity();
    // A registered arena's region is closed and the memory freed once it is released; an
    // unregistered one's slices were all released before its blocks were freed.
    a.unit.release();
  }

  /** The arena holding all of {@code [address, address + length)}; null when none does. */
  Arena find(long address, long length) {
    Map.Entry<Long, Arena> e = byAddress.floorEntry(address);
    if (e == null) {
      return null;
    }
    Arena a = e.getValue();
    if (address - a.base + length > a.memory.capacity()) {
      return null;
    }
    return a;
  }

  /** Free extents over all shared arenas (merged neighbours count once). */
  int freeExtents() {
    int n = 0;
    for (Arena a : arenas) {
      n += a.freeExtents();
    }
    return n;
  }

  /** Bytes of all arenas. */
  long bytes() {
    return arenaBytes;
  }
}
