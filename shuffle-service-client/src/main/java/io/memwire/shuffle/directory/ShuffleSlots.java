package io.memwire.shuffle.directory;

import io.memwire.transfer.Registrar;
import io.memwire.transfer.memory.MemoryAllocator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One shuffle's part of a {@link ShuffleDirectory}: its layout (index entries kept inline per slot,
 * room for checksums; both fixed by the shuffle's first output), its chunks of slots, and what the
 * output in each map index's slot holds. The directory changes it only under its own lock; the maps
 * are concurrent so that a shuffle taken out of the directory can be released and counted outside
 * that lock.
 */
final class ShuffleSlots {
  // The directory's logger name, so these lines read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleDirectory.class);

  /** Inline entries per slot (0: headers only). */
  final int entries;

  /** Whether slots have room for checksums (with 0 entries: headers naming metadata regions). */
  final boolean checksums;

  private final Map<Integer, SlotChunk> chunks = new ConcurrentHashMap<>();
  private final Map<Integer, RegisteredOutput> outputs = new ConcurrentHashMap<>();

  private ShuffleSlots(int entries, boolean checksums) {
    this.entries = entries;
    this.checksums = checksums;
  }

  /**
   * The layout the shuffle's first output sets: its index entries ({@code inline}, null when they
   * are not kept inline) and whether slots have room for checksums.
   */
  static ShuffleSlots first(int shuffleId, long[] inline, boolean checksums) {
    int entries = inline == null ? 0 : inline.length;
    LOG.debug(
        "directory of shuffle {}: {}",
        shuffleId,
        entries == 0
            ? checksums ? "slot headers naming metadata regions" : "slot headers only"
            : entries + " index entries inline per slot" + (checksums ? ", and checksums" : ""));
    return new ShuffleSlots(entries, checksums);
  }

  /**
   * The chunk holding {@code mapIndex}'s slot, registered on {@code allocator} if it is the first
   * output there.
   *
   * @throws io.memwire.transfer.RegistrationException when the chunk is new and a limit on the way
   *     has no room for it
   */
  SlotChunk chunkFor(int shuffleId, int mapIndex, Registrar node, MemoryAllocator allocator) {
    return chunks.computeIfAbsent(
        mapIndex / ChunkLayout.slotsPerChunk(entries, checksums),
        c -> SlotChunk.register(node, allocator, shuffleId, c, entries, checksums));
  }

  /** Records what {@code mapIndex}'s slot names from now on; returns what it named, or null. */
  RegisteredOutput replace(int mapIndex, RegisteredOutput output) {
    return outputs.put(mapIndex, output);
  }

  /**
   * Writes {@code slot} in its place in {@code chunk}: the header, with {@code inlineEntries}
   * entries after it (0: none) and, with {@code withSums}, its checksums.
   */
  void write(
      SlotChunk chunk, int mapIndex, DirectorySlot slot, int inlineEntries, boolean withSums) {
    int at =
        (mapIndex % ChunkLayout.slotsPerChunk(entries, checksums))
            * ChunkLayout.stride(entries, checksums);
    int length = ChunkLayout.readLength(inlineEntries, withSums);
    slot.writeTo(chunk.memory().duplicate().position(at).limit(at + length).slice());
  }

  /** Closes every output's regions and every chunk; reads of them fail from now on. */
  void release() {
    outputs.values().forEach(RegisteredOutput::close);
    chunks.values().forEach(SlotChunk::close);
  }

  int chunks() {
    return chunks.size();
  }

  int fileRegions() {
    int n = 0;
    for (RegisteredOutput o : outputs.values()) {
      n += o.files().size();
    }
    return n;
  }

  int metadataRegions() {
    int n = 0;
    for (RegisteredOutput o : outputs.values()) {
      n += o.metadata() == null ? 0 : 1;
    }
    return n;
  }
}
