package io.memwire.flight.memory;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.memory.MemoryUnit;
import java.nio.ByteBuffer;
import java.time.Duration;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * Direct memory in large arenas, handed out in blocks. Record batch bodies are copied into blocks
 * or allocated there directly through {@link #allocationManagerFactory()}. A block larger than an
 * arena gets an arena of its own, dropped when it is freed.
 *
 * <p>Arenas are registered with the node as a whole only when built with {@code registerArenas} (a
 * reader's landing memory). A server's memory is not: an arena holds the batches of many clients,
 * so each lease registers only its own bytes ({@link Block#slice}, {@link Location#slice}) as a
 * separately keyed region and closes it when the lease ends.
 *
 * <p>Blocks are sized to what was asked, rounded up to {@value #UNIT} bytes (Arrow's 64-byte
 * alignment holds), and carved from an arena's free extents best-fit; freed extents merge with free
 * neighbours. So a block pins at most {@value #UNIT} - 1 bytes more than asked: a 17 MB
 * record-batch body takes 17 MB, not the 32 MiB a power-of-two block would.
 *
 * <p>The total of all arenas never exceeds {@code maxBytes}, the limit of this memory's allocator;
 * {@link #allocate(long, Duration)} waits for frees up to a deadline when it would.
 *
 * <p>This is the placement strategy of a child of the node's registered-memory root ({@value
 * #SERVER_ALLOCATOR} for a server's unregistered arenas, {@value #LANDING_ALLOCATOR} for a reader's
 * registered ones): every arena is a unit of it from {@link Registrar#allocateRegistered} or {@link
 * Registrar#allocateDirect}, every block a reference-counted unit of it, and the last {@link
 * Block#release()} gives the extent back to its arena.
 */
public final class ArenaMemory implements AutoCloseable {
  /** Allocation unit and alignment of every block: 512 bytes (Arrow aligns buffers to 64). */
  static final int UNIT = 512;

  /** Child allocator of arenas no peer reads as a whole (a server's; leases register slices). */
  public static final String SERVER_ALLOCATOR = "flight-arenas";

  /** Child allocator of arenas registered as a whole (a reader's landing memory). */
  public static final String LANDING_ALLOCATOR = "flight-landing-arenas";

  private final Registrar node;
  private final long arenaSize;
  private final long maxBytes;
  private final String name;
  private final MemoryAllocator allocator;
  private final Arenas arenas;

  @GuardedBy("this")
  private boolean closed;

  /**
   * @param node whose allocator the arenas come from; they are registered with it as a whole
   * @param arenaSize bytes per arena, rounded up to a multiple of 1 MiB
   * @param maxBytes most bytes all arenas together may take
   * @param name used in log lines and errors
   */
  public ArenaMemory(Registrar node, long arenaSize, long maxBytes, String name) {
    this(node, arenaSize, maxBytes, name, true);
  }

  /**
   * @param node where arenas (or slices of them) are registered
   * @param arenaSize bytes per arena, rounded up to a multiple of 1 MiB
   * @param maxBytes most bytes all arenas together may take
   * @param name used in log lines and errors
   * @param registerArenas register every arena as one region ({@link Block#region()}); when false
   *     no arena is remotely readable and callers register slices themselves
   */
  public ArenaMemory(
      Registrar node, long arenaSize, long maxBytes, String name, boolean registerArenas) {
    if (arenaSize <= 0 || arenaSize > (1L << 30)) {
      throw new IllegalArgumentException(
          name + ": arena size must be in (0, 1 GiB], got " + arenaSize);
    }
    if (maxBytes < arenaSize) {
      throw new IllegalArgumentException(
          name + ": maxBytes " + maxBytes + " is smaller than one arena of " + arenaSize);
    }
    this.node = node;
    this.arenaSize = (arenaSize + (1 << 20) - 1) & -(1L << 20);
    this.maxBytes = maxBytes;
    this.name = name;
    this.allocator =
        node.memory().newChild(registerArenas ? LANDING_ALLOCATOR : SERVER_ALLOCATOR, maxBytes);
    this.arenas = new Arenas(node, allocator, name, registerArenas);
  }

  /** A block of at least {@code size} bytes, or an exception when {@code maxBytes} is reached. */
  public Block allocate(long size) {
    Block b = tryAllocate(size);
    if (b == null) {
      throw new RegistrationException(
          name + ": no registered memory for a block of " + size + " bytes: " + usage());
    }
    return b;
  }

  /**
   * A block of at least {@code size} bytes, waiting up to {@code wait} for other blocks to be freed
   * when {@code maxBytes} is reached.
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
        if (left <= 0 || roundUp(size) > maxBytes) {
          throw new RegistrationException(
              name
                  + ": no registered memory for a block of "
                  + size
                  + " bytes within "
                  + wait.toMillis()
                  + " ms: "
                  + usage());
        }
        wait(Math.max(1, left / 1_000_000), 0);
      }
    }
  }

  /**
   * How full this memory is, for a refusal: bytes in use against the limit, and in how many pieces
   * the arenas' free space lies (many: fragmented, a large block may not fit).
   */
  private synchronized String usage() {
    return allocatedBytesNow()
        + " of maxBytes="
        + maxBytes
        + " in use; arenas: "
        + arenas.bytes()
        + " bytes, free extents: "
        + freeExtents();
  }

  /** Bytes a block of {@code size} takes: a whole number of units. */
  static long roundUp(long size) {
    return (Math.max(1, size) + UNIT - 1) & -(long) UNIT;
  }

  /** A block, or null when {@code maxBytes} would be exceeded. */
  public synchronized Block tryAllocate(long size) {
    if (closed) {
      throw new IllegalStateException(name + " is closed");
    }
    if (size <= 0 || size > Integer.MAX_VALUE - 3 * 4096) {
      throw new IllegalArgumentException(name + ": block size must be in [1, 2 GiB), got " + size);
    }
    long bytes = roundUp(size);
    if (bytes > arenaSize) {
      // Too big for an arena: a dedicated one for this block.
      if (!allocator.withinLimit(size)) {
        return null;
      }
      Arena a = arenas.create(size, false);
      return take(a, 0, size);
    }
    for (Arena a : arenas.all()) {
      if (a.dedicated) {
        continue;
      }
      long off = a.alloc(bytes);
      if (off >= 0) {
        return take(a, off, bytes);
      }
    }
    if (!allocator.withinLimit(arenaSize)) {
      return null;
    }
    Arena a = arenas.create(arenaSize, true);
    return take(a, a.alloc(bytes), bytes);
  }

  @GuardedBy("this")
  private Block take(Arena a, long off, long bytes) {
    a.used += bytes;
    Block b = new Block(a, off, bytes);
    try {
      b.unit = allocator.allocate(bytes, "block of " + name, () -> free(b));
    } catch (RuntimeException e) {
      giveBack(b);
      throw e;
    }
    return b;
  }

  /** The free action of a block's unit: runs once, after its last release. */
  private synchronized void free(Block b) {
    giveBack(b);
    notifyAll();
  }

  @GuardedBy("this")
  private void giveBack(Block b) {
    arenas.giveBack(b.arena, b.offset, b.size, closed);
  }

  /**
   * Where {@code [address, address + length)} lies in this memory: the arena's region and the
   * offset in it; null when the range is not inside one arena.
   */
  public synchronized Location locate(long address, long length) {
    Arena a = arenas.find(address, length);
    return a == null ? null : new Location(a, address - a.base);
  }

  /** An Arrow allocation-manager factory whose buffers live in these arenas. */
  public AllocationManager.Factory allocationManagerFactory() {
    return new ArenaAllocationManager.Factory(this);
  }

  /**
   * A new root allocator whose buffers live in these arenas, for producers that lease their batches
   * in place. Close it before this memory.
   */
  public BufferAllocator newRootAllocator(long limit) {
    return new RootAllocator(
        RootAllocator.configBuilder()
            .allocationManagerFactory(allocationManagerFactory())
            .maxAllocation(limit)
            .build());
  }

  /** Bytes of blocks handed out and not yet released. */
  public long allocatedBytesNow() {
    return allocator.allocatedBytes();
  }

  /** Most block bytes out at once. */
  public long peakAllocatedBytes() {
    return allocator.peakBytes();
  }

  /** Blocks handed out and not yet released. */
  public long outstandingBlocks() {
    return allocator.liveUnits();
  }

  /** The child allocator whose units the blocks are. */
  public MemoryAllocator allocator() {
    return allocator;
  }

  /**
   * Free extents over all shared arenas (merged neighbours count once), reported when a block is
   * refused.
   */
  synchronized int freeExtents() {
    return arenas.freeExtents();
  }

  /** Bytes of all arenas right now. */
  public synchronized long arenaBytes() {
    return arenas.bytes();
  }

  public long maxBytes() {
    return maxBytes;
  }

  /**
   * Deregisters and frees every arena no block is using and closes the allocator, which reports
   * blocks still out as a leak; arenas still in use go when their last block is released (memory a
   * reader still holds must not vanish under it).
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    arenas.dropUnused();
    allocator.close();
    notifyAll();
  }

  /** Where a range lies in these arenas. */
  public static final class Location {
    private final Arena arena;
    private final long offset;

    Location(Arena arena, long offset) {
      this.arena = arena;
      this.offset = offset;
    }

    /** The arena's region; null when arenas are not registered. */
    public MemoryRegion region() {
      return arena.region;
    }

    /** A direct buffer over {@code length} bytes from this location, to register on its own. */
    public ByteBuffer slice(long length) {
      return arena.slice(offset, length);
    }

    public long offset() {
      return offset;
    }
  }

  /**
   * A block of arena memory, reference counted through its {@link MemoryUnit}: it arrives with a
   * count of 1 and goes back to its arena at the last {@link #release()}.
   */
  public static final class Block {
    private final Arena arena;
    private final long offset;
    private final long size;
    private MemoryUnit unit;

    Block(Arena arena, long offset, long size) {
      this.arena = arena;
      this.offset = offset;
      this.size = size;
    }

    public long address() {
      return arena.base + offset;
    }

    /** Usable bytes: what was asked for, rounded up to {@value ArenaMemory#UNIT}. */
    public long size() {
      return size;
    }

    /** The registered region the block lies in; null when arenas are not registered. */
    public MemoryRegion region() {
      return arena.region;
    }

    /**
     * A direct buffer over {@code [offset, offset + length)} of the block, for registering just
     * those bytes as a region of their own.
     */
    public ByteBuffer slice(long offset, long length) {
      if (offset < 0 || length <= 0 || offset + length > size) {
        throw new IllegalArgumentException(
            "slice [" + offset + ", +" + length + ") outside a " + "block of " + size + " bytes");
      }
      return arena.slice(this.offset + offset, length);
    }

    /** The block's offset inside {@link #region()}. */
    public long regionOffset() {
      return offset;
    }

    /** The unit on the allocator's books. */
    public MemoryUnit unit() {
      return unit;
    }

    /** Adds a reference. */
    public Block retain() {
      unit.retain();
      return this;
    }

    /**
     * Drops a reference; the last one returns the block to its arena.
     *
     * @return true when this was the last reference
     * @throws IllegalStateException when the block was already released
     */
    public boolean release() {
      return unit.release();
    }
  }
}
