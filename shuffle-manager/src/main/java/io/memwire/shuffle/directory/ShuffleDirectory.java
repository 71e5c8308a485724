package io.memwire.shuffle.directory;

import io.memwire.transfer.MemoryAccess;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.TransferNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This executor's shuffle directory. For each shuffle it keeps chunks of {@value
 * #SLOTS_PER_CHUNK} slots (registered direct memory, created on the first map output whose index
 * falls in the chunk), the slot of each map output, and every region registered for the shuffle's
 * files, so {@link #unregister} can deregister and unmap them all.
 */
public final class ShuffleDirectory implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleDirectory.class);

  /** Slots per chunk: map indexes [c * 1024, (c + 1) * 1024) live in chunk c (256 KiB). */
  public static final int SLOTS_PER_CHUNK = 1024;

  private final TransferNode node;
  private final Map<Integer, ShuffleEntry> shuffles = new ConcurrentHashMap<>();
  private volatile boolean closed;

  public ShuffleDirectory(TransferNode node) {
    this.node = node;
  }

  /** One registered chunk of slots. */
  private static final class Chunk {
    final ByteBuffer memory;
    final MemoryRegion region;
    final DirectoryPointer pointer;

    Chunk(ByteBuffer memory, MemoryRegion region, DirectoryPointer pointer) {
      this.memory = memory;
      this.region = region;
      this.pointer = pointer;
    }
  }

  /** Everything registered for one shuffle on this executor. */
  private static final class ShuffleEntry {
    final Map<Integer, Chunk> chunks = new ConcurrentHashMap<>();
    final List<MemoryRegion> fileRegions = new ArrayList<>();
  }

  /**
   * Records a map output whose files are already registered and returns the pointer reducers use
   * to find its slot. The directory owns the regions from now on (closed by {@link #unregister}).
   *
   * @throws IllegalStateException when the directory is closed (the regions are closed too)
   */
  public DirectoryPointer publish(int shuffleId, int mapIndex, long mapId, MemoryRegion index,
      MemoryRegion data) {
    ShuffleEntry entry;
    Chunk chunk;
    synchronized (this) {
      if (closed) {
        index.close();
        if (data != null) {
          data.close();
        }
        throw new IllegalStateException("shuffle directory is closed");
      }
      entry = shuffles.computeIfAbsent(shuffleId, id -> new ShuffleEntry());
      entry.fileRegions.add(index);
      if (data != null) {
        entry.fileRegions.add(data);
      }
      chunk = entry.chunks.computeIfAbsent(mapIndex / SLOTS_PER_CHUNK, this::newChunk);
    }
    DirectorySlot slot =
        new DirectorySlot(mapIndex, mapId, index.remote(), data == null ? null : data.remote());
    int at = (mapIndex % SLOTS_PER_CHUNK) * DirectorySlot.SIZE;
    slot.writeTo(chunk.memory.duplicate().position(at).limit(at + DirectorySlot.SIZE).slice());
    return chunk.pointer;
  }

  private Chunk newChunk(int chunkIndex) {
    ByteBuffer memory = ByteBuffer.allocateDirect(SLOTS_PER_CHUNK * DirectorySlot.SIZE)
        .order(ByteOrder.BIG_ENDIAN);
    try {
      MemoryRegion region = node.register(memory);
      return new Chunk(memory, region, new DirectoryPointer(chunkIndex, region.remote()));
    } catch (RuntimeException e) {
      MemoryAccess.free(memory);
      throw e;
    }
  }

  /** Deregisters and unmaps everything of one shuffle; a no-op when nothing was registered. */
  public void unregister(int shuffleId) {
    ShuffleEntry entry;
    synchronized (this) {
      entry = shuffles.remove(shuffleId);
    }
    if (entry != null) {
      release(entry);
      LOG.debug("released shuffle {}: {} file regions, {} chunks", shuffleId,
          entry.fileRegions.size(), entry.chunks.size());
    }
  }

  private void release(ShuffleEntry entry) {
    for (MemoryRegion r : entry.fileRegions) {
      r.close();
    }
    for (Chunk c : entry.chunks.values()) {
      // Not freed here: a read in flight may still copy from it; the GC frees it once unreachable.
      c.region.close();
    }
  }

  /** Number of shuffles with registered outputs here. */
  public int shuffles() {
    return shuffles.size();
  }

  /** Regions registered for one shuffle's files (0 when none). */
  public int fileRegions(int shuffleId) {
    ShuffleEntry e = shuffles.get(shuffleId);
    return e == null ? 0 : e.fileRegions.size();
  }

  /**
   * Test hook: overwrites the map id of every slot of a shuffle with -1 (never a task attempt
   * id), as a stale or corrupted slot would look, so reducers must detect the mismatch.
   * Idempotent.
   *
   * @return slots changed
   */
  public int invalidateForTesting(int shuffleId) {
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
  }
}
