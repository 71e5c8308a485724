package io.memwire.flight.memory;

import io.memwire.transfer.MemoryAccess;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferNode;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Direct memory registered with a {@link TransferNode} once, in large arenas, and handed out in
 * blocks (a buddy allocator per arena: power-of-two blocks that merge again when freed). Record
 * batch bodies are copied into blocks or allocated there directly through {@link
 * #allocationManagerFactory()}, so nothing is registered per batch. A block larger than an arena
 * gets an arena of its own, registered for that block and dropped when it is freed.
 *
 * <p>The total of all arenas never exceeds {@code maxBytes}; {@link #allocate(long, Duration)}
 * waits for frees up to a deadline when it would.
 */
public final class RegisteredMemory implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RegisteredMemory.class);
  /** Smallest block: 512 bytes, enough for Arrow's 64-byte alignment and small validity buffers. */
  static final int MIN_SHIFT = 9;

  private final TransferNode node;
  private final int arenaShift;
  private final long maxBytes;
  private final String name;
  private final List<Arena> arenas = new ArrayList<>();
  private final TreeMap<Long, Arena> byAddress = new TreeMap<>();
  private long arenaBytes;
  private long allocatedBytes;
  private long outstandingBlocks;
  private long peakAllocatedBytes;
  private boolean closed;

  /**
   * @param node where arenas are registered
   * @param arenaSize bytes per arena, rounded up to a power of two (at least 1 MiB)
   * @param maxBytes most bytes all arenas together may take
   * @param name used in log lines and errors
   */
  public RegisteredMemory(TransferNode node, long arenaSize, long maxBytes, String name) {
    if (arenaSize <= 0 || arenaSize > (1L << 30)) {
      throw new IllegalArgumentException(name + ": arena size must be in (0, 1 GiB], got " + arenaSize);
    }
    if (maxBytes < arenaSize) {
      throw new IllegalArgumentException(
          name + ": maxBytes " + maxBytes + " is smaller than one arena of " + arenaSize);
    }
    this.node = node;
    this.arenaShift = Math.max(20, 64 - Long.numberOfLeadingZeros(arenaSize - 1));
    this.maxBytes = maxBytes;
    this.name = name;
  }

  /** The node the memory is registered with. */
  public TransferNode node() {
    return node;
  }

  /** A block of at least {@code size} bytes, or an exception when {@code maxBytes} is reached. */
  public Block allocate(long size) {
    Block b = tryAllocate(size);
    if (b == null) {
      throw new RegistrationException(name + ": no registered memory for a block of " + size
          + " bytes: " + allocatedBytesNow() + " of maxBytes=" + maxBytes + " in use");
    }
    return b;
  }

  /**
   * A block of at least {@code size} bytes, waiting up to {@code wait} for other blocks to be
   * freed when {@code maxBytes} is reached.
   *
   * @throws RegistrationException when the deadline passes, or the size can never fit
   * @throws InterruptedException when interrupted while waiting
   */
  public Block allocate(long size, Duration wait) throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    synchronized (this) {
      while (true) {
        Block b = tryAllocate(size);
        if (b != null) {
          return b;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0 || blockSize(size) > maxBytes) {
          throw new RegistrationException(name + ": no registered memory for a block of " + size
              + " bytes within " + wait.toMillis() + " ms: " + allocatedBytes + " of maxBytes="
              + maxBytes + " in use");
        }
        wait(Math.max(1, left / 1_000_000), 0);
      }
    }
  }

  private long blockSize(long size) {
    int shift = Math.max(MIN_SHIFT, 64 - Long.numberOfLeadingZeros(Math.max(1, size) - 1));
    return shift > arenaShift ? size : 1L << shift;
  }

  /** A block, or null when {@code maxBytes} would be exceeded. */
  public synchronized Block tryAllocate(long size) {
    if (closed) {
      throw new IllegalStateException(name + " is closed");
    }
    if (size <= 0 || size > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(name + ": block size must be in [1, 2 GiB), got " + size);
    }
    int shift = Math.max(MIN_SHIFT, 64 - Long.numberOfLeadingZeros(size - 1));
    if (shift > arenaShift) {
      // Too big for an arena: a dedicated one, registered once for this block.
      if (arenaBytes + size > maxBytes) {
        return null;
      }
      Arena a = newArena(size, -1);
      return take(a, 0, -1, size);
    }
    for (Arena a : arenas) {
      if (a.dedicated) {
        continue;
      }
      long off = a.alloc(shift);
      if (off >= 0) {
        return take(a, off, shift, 1L << shift);
      }
    }
    long size1 = 1L << arenaShift;
    if (arenaBytes + size1 > maxBytes) {
      return null;
    }
    Arena a = newArena(size1, arenaShift);
    return take(a, a.alloc(shift), shift, 1L << shift);
  }

  private Block take(Arena a, long off, int shift, long bytes) {
    a.used += bytes;
    allocatedBytes += bytes;
    peakAllocatedBytes = Math.max(peakAllocatedBytes, allocatedBytes);
    outstandingBlocks++;
    return new Block(this, a, off, shift, bytes);
  }

  private Arena newArena(long size, int shift) {
    ByteBuffer memory = ByteBuffer.allocateDirect((int) size);
    MemoryRegion region;
    try {
      region = node.register(memory);
    } catch (RuntimeException e) {
      MemoryAccess.free(memory);
      throw e;
    }
    Arena a = new Arena(memory, MemoryAccess.address(memory), region, shift);
    arenas.add(a);
    byAddress.put(a.base, a);
    arenaBytes += size;
    LOG.debug("{}: registered arena of {} bytes ({} in {} arenas)", name, size, arenaBytes,
        arenas.size());
    return a;
  }

  synchronized void free(Block b) {
    Arena a = b.arena;
    if (b.shift >= 0) {
      a.release(b.offset, b.shift);
    }
    a.used -= b.size;
    allocatedBytes -= b.size;
    outstandingBlocks--;
    if (a.dedicated || (closed && a.used == 0)) {
      drop(a);
    }
    notifyAll();
  }

  private void drop(Arena a) {
    arenas.remove(a);
    byAddress.remove(a.base);
    arenaBytes -= a.memory.capacity();
    a.region.close();
    // A read the transport is still serving may touch the memory until the region is released.
    a.region.released().whenComplete((v, e) -> MemoryAccess.free(a.memory));
  }

  /**
   * Where {@code [address, address + length)} lies in registered memory: the arena's region and
   * the offset in it; null when the range is not inside one arena.
   */
  public synchronized Location locate(long address, long length) {
    Map.Entry<Long, Arena> e = byAddress.floorEntry(address);
    if (e == null) {
      return null;
    }
    Arena a = e.getValue();
    long off = address - a.base;
    if (off + length > a.memory.capacity()) {
      return null;
    }
    return new Location(a.region, off);
  }

  /** An Arrow allocation-manager factory whose buffers live in this registered memory. */
  public AllocationManager.Factory allocationManagerFactory() {
    return new RegisteredAllocationManager.Factory(this);
  }

  /**
   * A new root allocator whose buffers live in this registered memory, for producers that lease
   * their batches in place. Close it before this memory.
   */
  public BufferAllocator newRootAllocator(long limit) {
    return new RootAllocator(RootAllocator.configBuilder()
        .allocationManagerFactory(allocationManagerFactory()).maxAllocation(limit).build());
  }

  public synchronized long allocatedBytesNow() {
    return allocatedBytes;
  }

  public synchronized long peakAllocatedBytes() {
    return peakAllocatedBytes;
  }

  public synchronized long outstandingBlocks() {
    return outstandingBlocks;
  }

  /** Bytes registered in arenas right now. */
  public synchronized long arenaBytes() {
    return arenaBytes;
  }

  public long maxBytes() {
    return maxBytes;
  }

  /**
   * Deregisters and frees every arena no block is using; arenas still in use go when their last
   * block is freed (memory a reader still holds must not vanish under it).
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (Arena a : new ArrayList<>(arenas)) {
      if (a.used == 0) {
        drop(a);
      }
    }
    if (outstandingBlocks > 0) {
      LOG.warn("{} closed with {} blocks ({} bytes) still in use; their arenas are freed when "
          + "they are released", name, outstandingBlocks, allocatedBytes);
    }
    notifyAll();
  }

  /** Where a range lies in registered memory. */
  public static final class Location {
    private final MemoryRegion region;
    private final long offset;

    Location(MemoryRegion region, long offset) {
      this.region = region;
      this.offset = offset;
    }

    public MemoryRegion region() {
      return region;
    }

    public long offset() {
      return offset;
    }
  }

  /** A block of registered memory; {@link #free()} returns it exactly once. */
  public static final class Block {
    private final RegisteredMemory owner;
    private final Arena arena;
    private final long offset;
    private final int shift;
    private final long size;
    private boolean freed;

    Block(RegisteredMemory owner, Arena arena, long offset, int shift, long size) {
      this.owner = owner;
      this.arena = arena;
      this.offset = offset;
      this.shift = shift;
      this.size = size;
    }

    public long address() {
      return arena.base + offset;
    }

    /** Usable bytes (at least what was asked for). */
    public long size() {
      return size;
    }

    /** The registered region the block lies in. */
    public MemoryRegion region() {
      return arena.region;
    }

    /** The block's offset inside {@link #region()}. */
    public long regionOffset() {
      return offset;
    }

    public void free() {
      synchronized (owner) {
        if (freed) {
          throw new IllegalStateException("block freed twice");
        }
        freed = true;
      }
      owner.free(this);
    }
  }

  /** One registered arena and its buddy free lists (offsets per block size). */
  private static final class Arena {
    final ByteBuffer memory;
    final long base;
    final MemoryRegion region;
    final boolean dedicated;
    final int shift;
    final HashSet<Long>[] free;
    long used;

    @SuppressWarnings({"unchecked", "rawtypes"})
    Arena(ByteBuffer memory, long base, MemoryRegion region, int shift) {
      this.memory = memory;
      this.base = base;
      this.region = region;
      this.dedicated = shift < 0;
      this.shift = shift;
      if (dedicated) {
        this.free = null;
      } else {
        this.free = new HashSet[shift - MIN_SHIFT + 1];
        for (int i = 0; i < free.length; i++) {
          free[i] = new HashSet<>();
        }
        free[shift - MIN_SHIFT].add(0L);
      }
    }

    /** Offset of a free block of 2^s bytes, splitting larger ones; -1 when none. */
    long alloc(int s) {
      for (int k = s; k <= shift; k++) {
        HashSet<Long> list = free[k - MIN_SHIFT];
        if (list.isEmpty()) {
          continue;
        }
        Iterator<Long> it = list.iterator();
        long off = it.next();
        it.remove();
        while (k > s) {
          k--;
          free[k - MIN_SHIFT].add(off + (1L << k));
        }
        return off;
      }
      return -1;
    }

    void release(long off, int s) {
      while (s < shift) {
        long buddy = off ^ (1L << s);
        if (!free[s - MIN_SHIFT].remove(buddy)) {
          break;
        }
        off = Math.min(off, buddy);
        s++;
      }
      free[s - MIN_SHIFT].add(off);
    }
  }
}
