package io.memwire.shuffle.directory;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.MemoryUnit;
import io.memwire.transfer.memory.RegisteredAllocator;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This executor's shuffle directory. For each shuffle it keeps chunks of {@value #SLOTS_PER_CHUNK}
 * slots (registered direct memory, created on the first map output whose index falls in the chunk),
 * the slot of each map output, and every region registered for the shuffle's files, so {@link
 * #unregister} can deregister and unmap them all.
 *
 * <p>Chunks are units of the node's {@value #ALLOCATOR} allocator, each over registered memory from
 * {@link TransferNode#allocateRegistered} on the same allocator: {@link #unregister} (or {@link
 * #close}) closes a chunk's region and releases the directory's reference; a {@link #publish}
 * writing into the chunk holds a reference of its own meanwhile. The last release gives the memory
 * back, which the node frees once no read still copies from it.
 */
public final class ShuffleDirectory implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleDirectory.class);

  /** Slots per chunk: map indexes [c * 1024, (c + 1) * 1024) live in chunk c (256 KiB). */
  public static final int SLOTS_PER_CHUNK = 1024;

  /** Name of the directory's child of the node's registered-memory root. */
  public static final String ALLOCATOR = "shuffle-directory";

  private final TransferNode node;
  private final RegisteredAllocator allocator;
  private final Map<Integer, ShuffleEntry> shuffles = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /** A directory whose chunks are units of the node's {@value #ALLOCATOR} child allocator. */
  public ShuffleDirectory(TransferNode node) {
    this(node, node.memory(), ALLOCATOR);
  }

  /**
   * A directory whose chunks are units of a new child {@code name} of {@code parent} (a service
   * keeps one directory per application and executor under one parent).
   */
  public ShuffleDirectory(TransferNode node, RegisteredAllocator parent, String name) {
    this.node = node;
    this.allocator = parent.newChild(name);
  }

  /** One registered chunk of slots. */
  private static final class Chunk {
    final ByteBuffer memory;
    final MemoryRegion region;
    final DirectoryPointer pointer;
    final MemoryUnit unit;

    Chunk(ByteBuffer memory, MemoryRegion region, DirectoryPointer pointer, MemoryUnit unit) {
      this.memory = memory;
      this.region = region;
      this.pointer = pointer;
      this.unit = unit;
    }
  }

  /** Everything registered for one shuffle on this executor. */
  private static final class ShuffleEntry {
    final Map<Integer, Chunk> chunks = new ConcurrentHashMap<>();

    /** The file regions of the output in each map index's slot: index, and data or none. */
    final Map<Integer, List<MemoryRegion>> outputs = new ConcurrentHashMap<>();

    int fileRegions() {
      int n = 0;
      for (List<MemoryRegion> l : outputs.values()) {
        n += l.size();
      }
      return n;
    }
  }

  /**
   * Records a map output whose files are already registered and returns the pointer reducers use to
   * find its slot. The directory owns the regions from now on (closed by {@link #unregister}). An
   * output published again for the same map index replaces the earlier one: its regions are closed
   * once the slot names the new one, so republishing never accumulates registrations.
   *
   * @throws IllegalStateException when the directory is closed (the regions are closed too)
   */
  public DirectoryPointer publish(
      int shuffleId, int mapIndex, long mapId, MemoryRegion index, MemoryRegion data) {
    ShuffleEntry entry;
    Chunk chunk;
    List<MemoryRegion> replaced;
    synchronized (this) {
      if (closed) {
        index.close();
        if (data != null) {
          data.close();
        }
        throw new IllegalStateException("shuffle directory is closed");
      }
      entry = shuffles.computeIfAbsent(shuffleId, id -> new ShuffleEntry());
      replaced = entry.outputs.put(mapIndex, data == null ? List.of(index) : List.of(index, data));
      chunk = entry.chunks.computeIfAbsent(mapIndex / SLOTS_PER_CHUNK, c -> newChunk(shuffleId, c));
      chunk.unit.retain(); // an unregister racing this write must not free the chunk under it
    }
    try {
      DirectorySlot slot =
          new DirectorySlot(mapIndex, mapId, index.remote(), data == null ? null : data.remote());
      int at = (mapIndex % SLOTS_PER_CHUNK) * DirectorySlot.SIZE;
      slot.writeTo(chunk.memory.duplicate().position(at).limit(at + DirectorySlot.SIZE).slice());
      return chunk.pointer;
    } finally {
      chunk.unit.release();
      if (replaced != null) {
        replaced.forEach(MemoryRegion::close);
      }
    }
  }

  private Chunk newChunk(int shuffleId, int chunkIndex) {
    int size = SLOTS_PER_CHUNK * DirectorySlot.SIZE;
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
    return new Chunk(
        registered.buffer().order(ByteOrder.BIG_ENDIAN),
        region,
        new DirectoryPointer(chunkIndex, region.remote()),
        unit);
  }

  /** Deregisters and unmaps everything of one shuffle; a no-op when nothing was registered. */
  public void unregister(int shuffleId) {
    ShuffleEntry entry;
    synchronized (this) {
      entry = shuffles.remove(shuffleId);
    }
    if (entry != null) {
      release(entry);
      LOG.debug(
          "released shuffle {}: {} file regions, {} chunks",
          shuffleId,
          entry.fileRegions(),
          entry.chunks.size());
    }
  }

  private void release(ShuffleEntry entry) {
    for (List<MemoryRegion> l : entry.outputs.values()) {
      l.forEach(MemoryRegion::close);
    }
    for (Chunk c : entry.chunks.values()) {
      c.region.close(); // reads from now on fail; a publish still writing holds its own reference
      c.unit.release();
    }
  }

  /** Number of shuffles with registered outputs here. */
  public int shuffles() {
    return shuffles.size();
  }

  /** Regions registered for one shuffle's files (0 when none). */
  public int fileRegions(int shuffleId) {
    ShuffleEntry e = shuffles.get(shuffleId);
    return e == null ? 0 : e.fileRegions();
  }

  /**
   * Test hook: overwrites the map id of every slot of a shuffle with -1 (never a task attempt id),
   * as a stale or corrupted slot would look, so reducers must detect the mismatch. Idempotent.
   *
   * @return slots changed
   */
  public synchronized int invalidateForTesting(int shuffleId) {
    ShuffleEntry e = shuffles.get(shuffleId);
    if (e == null) {
      return 0;
    }
    int n = 0;
    for (Chunk c : e.chunks.values()) {
      for (int i = 0; i < SLOTS_PER_CHUNK; i++) {
        int at = i * DirectorySlot.SIZE;
        if (c.memory.getInt(at) == DirectorySlot.MAGIC) {
          c.memory.putLong(at + 8, -1L);
          n++;
        }
      }
    }
    return n;
  }

  /** Releases everything; later {@link #publish} calls fail. Idempotent. */
  @Override
  public void close() {
    List<ShuffleEntry> all;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      all = new ArrayList<>(shuffles.values());
      shuffles.clear();
    }
    for (ShuffleEntry e : all) {
      release(e);
    }
    allocator.close(); // a chunk a publish still writes into is reported, and freed after it
  }

  /** The directory's allocator: chunk bytes, peak and live chunks. */
  public RegisteredAllocator allocator() {
    return allocator;
  }
}
