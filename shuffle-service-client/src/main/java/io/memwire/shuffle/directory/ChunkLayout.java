package io.memwire.shuffle.directory;

/**
 * The layout of a shuffle directory's chunks: how far apart slots are, how many a chunk holds and
 * how many bytes a reader reads for one slot, for slots with {@code entries} inline index entries
 * (0: headers only) and, with {@code checksums}, room for one checksum per reduce partition. The
 * slot's own format is {@link DirectorySlot}'s.
 */
public final class ChunkLayout {
  private ChunkLayout() {}

  /**
   * Bytes from one slot's start to the next in a directory whose slots carry {@code entries} inline
   * entries (0: none): header and entries, rounded up to 64 bytes.
   */
  public static int stride(int entries) {
    return stride(entries, false);
  }

  /**
   * Bytes from one slot's start to the next in a directory whose slots carry {@code entries} inline
   * entries (0: none) and, with {@code checksums}, room for one checksum per reduce partition.
   */
  public static int stride(int entries, boolean checksums) {
    return entries == 0 ? DirectorySlot.SIZE : (readLength(entries, checksums) + 63) & ~63;
  }

  /**
   * Slots per directory chunk of a shuffle whose slots carry {@code entries} inline entries (0:
   * none): as many as fit in {@link ShuffleDirectory#CHUNK_BYTES}, at most {@link
   * ShuffleDirectory#SLOTS_PER_CHUNK}.
   */
  public static int slotsPerChunk(int entries) {
    return slotsPerChunk(entries, false);
  }

  /** Slots per directory chunk of a shuffle whose slots have room for checksums too. */
  public static int slotsPerChunk(int entries, boolean checksums) {
    return entries == 0
        ? ShuffleDirectory.SLOTS_PER_CHUNK
        : Math.max(
            1,
            Math.min(
                ShuffleDirectory.SLOTS_PER_CHUNK,
                ShuffleDirectory.CHUNK_BYTES / stride(entries, checksums)));
  }

  /** Bytes a reader reads for one slot with {@code entries} inline entries: header and entries. */
  public static int readLength(int entries) {
    return DirectorySlot.SIZE + entries * 8;
  }

  /** Bytes a reader reads for one slot with {@code entries} inline entries and checksums. */
  public static int readLength(int entries, boolean checksums) {
    return DirectorySlot.SIZE + entries * 8 + (checksums && entries > 0 ? (entries - 1) * 8 : 0);
  }
}
