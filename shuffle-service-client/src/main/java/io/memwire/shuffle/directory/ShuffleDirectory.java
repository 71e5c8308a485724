package io.memwire.shuffle.directory;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.memory.MemoryAllocator;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This executor's shuffle directory. For each shuffle it keeps chunks of slots (registered direct
 * memory, created on the first map output whose index falls in the chunk), the slot of each map
 * output, and every region registered for the shuffle's files, so {@link #unregister} can
 * deregister and unmap them all.
 *
 * <p>Layout. A shuffle whose first published index file has at most {@value
 * DirectorySlot#MAX_INLINE_ENTRIES} entries (reduce partitions + 1) keeps every output's index
 * entries inline after its slot header: slots of {@link ChunkLayout#stride} bytes, as many per
 * chunk as fit in {@value #CHUNK_BYTES} bytes ({@link ChunkLayout#slotsPerChunk}). A reducer then
 * reads a map output's slot and entries in one read, at an offset it computes from the pointer. A
 * shuffle with more partitions, or whose first index is not a readable file, keeps headers only
 * ({@value #SLOTS_PER_CHUNK} per chunk) and reducers read the index file apart, as they do for an
 * output whose index has another length than the shuffle's first (never with Spark's partitioner).
 * When such a shuffle's first output comes with Spark's checksums, each output with checksums gets
 * a metadata region instead (registered direct memory of {@link DirectorySlot#metadataLength}
 * bytes, a unit of the {@value #ALLOCATOR} allocator, filled once: its index entries, then its
 * checksums) that its MWS4 slot names in place of the index file (whose region the directory then
 * closes), so reducers read a block's checksums in the batch they read its entries in; the metadata
 * is released with the output's regions (replaced, unregistered or closed).
 *
 * <p>Chunks are units of the node's {@value #ALLOCATOR} allocator, each over registered memory from
 * {@link Registrar#allocateRegistered} on the same allocator: {@link #unregister} (or {@link
 * #close}) closes a chunk's region and releases the directory's reference; a {@link #publish}
 * writing into the chunk holds a reference of its own meanwhile. The last release gives the memory
 * back, which the node frees once no read still copies from it.
 *
 * <p>Parts: {@link ShuffleSlots} (one shuffle's layout, chunks and outputs), {@link SlotChunk} (one
 * registered chunk), {@link RegisteredOutput} (one output's regions) and {@link OutputMetadata}
 * (what is read of an index file at publication). Which shuffles exist, and whether the directory
 * is closed, change under this object's monitor; slots are written outside it.
 */
public final class ShuffleDirectory implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleDirectory.class);

  /**
   * Slots per chunk of headers only: map indexes [c * 1024, (c + 1) * 1024) live in chunk c (256
   * KiB); the most slots a chunk holds with inline entries too.
   */
  public static final int SLOTS_PER_CHUNK = 1024;

  /** Bytes a chunk with inline entries holds at most (unless one slot is larger). */
  public static final int CHUNK_BYTES = 256 * 1024;

  /** Name of the directory's child of the node's registered-memory root. */
  public static final String ALLOCATOR = "shuffle-directory";

  private final Registrar node;
  private final MemoryAllocator allocator;
  private final OutputMetadata outputMetadata;

  @GuardedBy("this")
  private final Map<Integer, ShuffleSlots> shuffles = new HashMap<>();

  @GuardedBy("this")
  private boolean closed;

  /** A directory whose chunks are units of the node's {@value #ALLOCATOR} child allocator. */
  public ShuffleDirectory(Registrar node) {
    this(node, node.memory(), ALLOCATOR);
  }

  /**
   * A directory whose chunks are units of a new child {@code name} of {@code parent}: their
   * registered memory is reserved against {@code parent}'s limit and its parents' (a service keeps
   * each executor's directory under its application's node, so chunks count against the
   * application's and its user's byte quotas).
   */
  public ShuffleDirectory(Registrar node, MemoryAllocator parent, String name) {
    this.node = node;
    this.allocator = parent.newChild(name);
    this.outputMetadata = new OutputMetadata(node, allocator);
  }

  /**
   * Records a map output whose files are already registered and returns the pointer reducers use to
   * find its slot. The directory owns the regions from now on (closed by {@link #unregister}). An
   * output published again for the same map index replaces the earlier one: its regions are closed
   * once the slot names the new one, so republishing never accumulates registrations. The index
   * region must map the whole index file: its entries are read from the file to be kept inline.
   *
   * <p>An output whose index cannot be read or has another length than its shuffle's first gets a
   * slot header only: reducers read its index file apart.
   *
   * @throws IllegalStateException when the directory is closed (the regions are closed too)
   * @throws io.memwire.transfer.RegistrationException when the output needs a new chunk and a limit
   *     on the way (the registration budget, a parent's quota) has no room for it (the regions are
   *     closed too)
   */
  public DirectoryPointer publish(
      int shuffleId, int mapIndex, long mapId, MemoryRegion index, MemoryRegion data) {
    OutputChecksums sums = null;
    if (index.isFileBacked() && index.length() % 8 == 0 && index.length() >= 16) {
      sums =
          OutputChecksums.readBeside(index.file(), (int) Math.min(index.length() / 8 - 1, 1 << 20));
    }
    return publish(shuffleId, mapIndex, mapId, index, data, sums);
  }

  /**
   * As {@link #publish(int, int, long, MemoryRegion, MemoryRegion)}, with Spark's checksums of the
   * output given ({@code checksums}, null for none) instead of read beside the index file: kept
   * inline after the entries when the shuffle's directory has room for them (its first output had
   * checksums of its index's length), so reducers verify the output's blocks.
   */
  public DirectoryPointer publish(
      int shuffleId,
      int mapIndex,
      long mapId,
      MemoryRegion index,
      MemoryRegion data,
      OutputChecksums checksums) {
    long[] inline = OutputMetadata.inlineEntries(index);
    long indexEntries = index.length() % 8 == 0 ? index.length() / 8 : -1;
    OutputChecksums sums =
        checksums != null
                && indexEntries >= 2
                && checksums.values().length == indexEntries - 1
                && checksums.values().length <= DirectorySlot.MAX_METADATA_PARTITIONS
            ? checksums
            : null;
    // A shuffle of headers only with room for checksums (or one whose first output this is) names
    // a metadata region in each slot; built before the lock, released below if not used after all.
    boolean metadataWanted = false;
    if (sums != null && inline == null) {
      synchronized (this) {
        ShuffleSlots known = shuffles.get(shuffleId);
        metadataWanted = known == null ? !closed : known.entries == 0 && known.checksums;
      }
    }
    BufferUnit metadata =
        metadataWanted ? outputMetadata.build(shuffleId, mapId, index, sums) : null;
    ShuffleSlots entry;
    SlotChunk chunk;
    RegisteredOutput replaced;
    synchronized (this) {
      if (closed) {
        index.close();
        if (data != null) {
          data.close();
        }
        if (metadata != null) {
          metadata.release();
        }
        throw new IllegalStateException("shuffle directory is closed");
      }
      boolean roomFirst = sums != null && (inline != null || metadata != null);
      entry = shuffles.computeIfAbsent(shuffleId, id -> ShuffleSlots.first(id, inline, roomFirst));
      if (metadata != null && (entry.entries != 0 || !entry.checksums)) {
        metadata.release();
        metadata = null;
      }
      try {
        chunk = entry.chunkFor(shuffleId, mapIndex, node, allocator);
      } catch (RuntimeException e) {
        index.close();
        if (data != null) {
          data.close();
        }
        if (metadata != null) {
          metadata.release();
        }
        throw e;
      }
      // With a metadata region in its place, the index file's region is not read: closed below.
      List<MemoryRegion> files =
          metadata != null
              ? (data == null ? List.of() : List.of(data))
              : (data == null ? List.of(index) : List.of(index, data));
      replaced = entry.replace(mapIndex, new RegisteredOutput(files, metadata));
      chunk.unit().retain(); // an unregister racing this write must not free the chunk under it
    }
    if (metadata != null) {
      index.close();
    }
    try {
      int entries = entry.entries;
      boolean fits = inline != null && inline.length == entries;
      if (entries != 0 && !fits) {
        LOG.debug(
            "map output {} of shuffle {}: index of {} bytes not kept inline ({} entries per slot)",
            mapId,
            shuffleId,
            index.length(),
            entries);
      }
      boolean withSums = fits && entry.checksums && sums != null;
      DirectorySlot slot =
          metadata != null
              ? DirectorySlot.withMetadata(
                  mapIndex,
                  mapId,
                  metadata.region().remote(),
                  data == null ? null : data.remote(),
                  (int) indexEntries,
                  sums.algorithm())
              : new DirectorySlot(
                  mapIndex,
                  mapId,
                  index.remote(),
                  data == null ? null : data.remote(),
                  fits ? inline : null,
                  withSums ? sums : null);
      entry.write(chunk, mapIndex, slot, fits ? entries : 0, withSums);
      return chunk.pointer();
    } finally {
      chunk.unit().release();
      if (replaced != null) {
        replaced.close();
      }
    }
  }

  /** Deregisters and unmaps everything of one shuffle; a no-op when nothing was registered. */
  public void unregister(int shuffleId) {
    ShuffleSlots entry;
    synchronized (this) {
      entry = shuffles.remove(shuffleId);
    }
    if (entry != null) {
      entry.release();
      LOG.debug(
          "released shuffle {}: {} file regions, {} chunks",
          shuffleId,
          entry.fileRegions(),
          entry.chunks());
    }
  }

  /** Number of shuffles with registered outputs here. */
  public synchronized int shuffles() {
    return shuffles.size();
  }

  /** Metadata regions of one shuffle's outputs (0 when none). */
  public synchronized int metadataRegions(int shuffleId) {
    ShuffleSlots e = shuffles.get(shuffleId);
    return e == null ? 0 : e.metadataRegions();
  }

  /** Regions registered for one shuffle's files (0 when none). */
  public synchronized int fileRegions(int shuffleId) {
    ShuffleSlots e = shuffles.get(shuffleId);
    return e == null ? 0 : e.fileRegions();
  }

  /** Releases everything; later {@link #publish} calls fail. Idempotent. */
  @Override
  public void close() {
    List<ShuffleSlots> all;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      all = new ArrayList<>(shuffles.values());
      shuffles.clear();
    }
    for (ShuffleSlots e : all) {
      e.release();
    }
    allocator.close(); // a chunk a publish still writes into is reported, and freed after it
  }

  /** The directory's allocator: chunk bytes, peak and live chunks. */
  public MemoryAllocator allocator() {
    return allocator;
  }
}
