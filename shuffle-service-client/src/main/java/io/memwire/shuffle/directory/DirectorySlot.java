package io.memwire.shuffle.directory;

import io.memwire.transfer.RemoteRegion;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * One map output's entry in a shuffle directory: a {@value #SIZE}-byte header, big-endian, followed
 * in a directory with inline entries by the output's index entries.
 *
 * <pre>
 *   0  u32  magic: 'MWS1' (header only) or 'MWS2' (entries follow); 0 = empty slot
 *   4  u32  map index
 *   8  u64  map id (the map task attempt id)
 *  16  u64  data file length (0 = no data file: every partition empty)
 *  24  u64  index file length
 *  32  ..   index file RemoteRegion encoding (1 segment: 50 bytes)
 *  88  ..   data file RemoteRegion encoding, when the data length is positive (up to 3 segments)
 * 248  u32  MWS2: number of entries n (reduce partitions + 1)
 * 252  u32  MWS2: CRC32C of bytes [4, 252) and of the entries
 * 256  n x u64  MWS2: the index file's offsets (Spark's index, as in the file)
 * </pre>
 *
 * <p>The magic is written last, so a slot is either empty, stale (another map id) or complete. A
 * read that raced a republish of the same map index (torn: old header, new entries) fails the CRC
 * and is treated as stale, so a reader never uses entries of another output.
 */
public final class DirectorySlot {
  /** Bytes of a slot's header (the whole slot in a directory without inline entries). */
  public static final int SIZE = 256;

  /**
   * Most index entries (reduce partitions + 1) kept inline next to a slot: 8 KiB; a shuffle with
   * more reduce partitions gets a directory of headers only.
   */
  public static final int MAX_INLINE_ENTRIES = 1024;

  static final int MAGIC = 0x4d575331; // "MWS1"
  static final int MAGIC_INLINE = 0x4d575332; // "MWS2"
  private static final int INDEX_AT = 32;
  private static final int DATA_AT = 88;
  private static final int COUNT_AT = 248;
  private static final int CRC_AT = 252;

  private final int mapIndex;
  private final long mapId;
  private final RemoteRegion index;
  private final RemoteRegion data;
  private final long dataLength;
  private final long[] entries;

  /** A slot without inline entries. */
  public DirectorySlot(int mapIndex, long mapId, RemoteRegion index, RemoteRegion data) {
    this(mapIndex, mapId, index, data, null);
  }

  /**
   * A slot with the output's index entries inline ({@code entries}, Spark's offsets; null for
   * none). The array is kept, not copied: callers must not change it.
   */
  public DirectorySlot(
      int mapIndex, long mapId, RemoteRegion index, RemoteRegion data, long[] entries) {
    if (entries != null && (entries.length < 2 || entries.length > MAX_INLINE_ENTRIES)) {
      throw new IllegalArgumentException(
          "inline index entries: " + entries.length + ", need 2 to " + MAX_INLINE_ENTRIES);
    }
    this.mapIndex = mapIndex;
    this.mapId = mapId;
    this.index = index;
    this.data = data;
    this.dataLength = data == null ? 0 : data.length();
    this.entries = entries;
  }

  /** True when both descriptors fit into a slot. */
  public static boolean fits(RemoteRegion index, RemoteRegion data) {
    return INDEX_AT + index.encodedSize() <= DATA_AT
        && (data == null || DATA_AT + data.encodedSize() <= COUNT_AT);
  }

  /**
   * Bytes from one slot's start to the next in a directory whose slots carry {@code entries} inline
   * entries (0: none): header and entries, rounded up to 64 bytes.
   */
  public static int stride(int entries) {
    return entries == 0 ? SIZE : (SIZE + entries * 8 + 63) & ~63;
  }

  /**
   * Slots per directory chunk of a shuffle whose slots carry {@code entries} inline entries (0:
   * none): as many as fit in {@link ShuffleDirectory#CHUNK_BYTES}, at most {@link
   * ShuffleDirectory#SLOTS_PER_CHUNK}.
   */
  public static int slotsPerChunk(int entries) {
    return entries == 0
        ? ShuffleDirectory.SLOTS_PER_CHUNK
        : Math.max(
            1,
            Math.min(
                ShuffleDirectory.SLOTS_PER_CHUNK, ShuffleDirectory.CHUNK_BYTES / stride(entries)));
  }

  /** Bytes a reader reads for one slot with {@code entries} inline entries: header and entries. */
  public static int readLength(int entries) {
    return SIZE + entries * 8;
  }

  public int mapIndex() {
    return mapIndex;
  }

  public long mapId() {
    return mapId;
  }

  public RemoteRegion index() {
    return index;
  }

  /** The data file's region, or null when the map output has no data. */
  public RemoteRegion data() {
    return data;
  }

  public long dataLength() {
    return dataLength;
  }

  /** The inline index entries (Spark's offsets, unchecked), or null when the slot has none. */
  public long[] entries() {
    return entries;
  }

  /** This slot without its inline entries (what a reader keeps of it apart from its index). */
  public DirectorySlot withoutEntries() {
    return entries == null ? this : new DirectorySlot(mapIndex, mapId, index, data, null);
  }

  /** Writes this slot into {@code slot} ({@link #readLength} bytes at its position 0). */
  void writeTo(ByteBuffer slot) {
    ByteBuffer b = slot.duplicate().order(ByteOrder.BIG_ENDIAN);
    b.putInt(0, 0);
    b.putInt(4, mapIndex);
    b.putLong(8, mapId);
    b.putLong(16, dataLength);
    b.putLong(24, index.length());
    index.encode(b.duplicate().position(INDEX_AT));
    if (data != null) {
      data.encode(b.duplicate().position(DATA_AT));
    }
    if (entries != null) {
      b.putInt(COUNT_AT, entries.length);
      for (int i = 0; i < entries.length; i++) {
        b.putLong(SIZE + i * 8, entries[i]);
      }
      b.putInt(CRC_AT, crc(b, 0, entries.length));
      b.putInt(0, MAGIC_INLINE);
    } else {
      b.putInt(0, MAGIC);
    }
  }

  private static int crc(ByteBuffer b, int base, int entries) {
    CRC32C crc = new CRC32C();
    crc.update(b.duplicate().position(base + 4).limit(base + CRC_AT));
    crc.update(b.duplicate().position(base + SIZE).limit(base + SIZE + entries * 8));
    return (int) crc.getValue();
  }

  /**
   * Decodes a slot's header read from a peer, of either kind, without its entries.
   *
   * @return the slot, or null when it is empty or not a valid slot
   */
  public static DirectorySlot read(ByteBuffer bytes) {
    return decode(bytes, -1);
  }

  /**
   * Decodes a slot read from a peer whose directory keeps {@code entries} inline entries per slot
   * (0: none). An inline slot must hold exactly that many entries whose CRC matches; a header-only
   * slot is valid in either directory (an output whose index did not match its shuffle's layout).
   *
   * @return the slot (with its entries when it has them), or null when it is empty, inline where
   *     headers only were read, torn or not a valid slot
   */
  public static DirectorySlot read(ByteBuffer bytes, int entries) {
    if (entries < 0 || entries > MAX_INLINE_ENTRIES) {
      return null;
    }
    return decode(bytes, entries);
  }

  private static DirectorySlot decode(ByteBuffer bytes, int entries) {
    if (bytes.remaining() < SIZE) {
      return null;
    }
    ByteBuffer b = bytes.duplicate().order(ByteOrder.BIG_ENDIAN);
    int base = b.position();
    int magic = b.getInt(base);
    boolean inline = magic == MAGIC_INLINE;
    if ((magic != MAGIC && !inline) || (entries == 0 && inline)) {
      return null;
    }
    long[] offsets = null;
    if (inline && entries > 0) {
      if (b.remaining() < readLength(entries)
          || b.getInt(base + COUNT_AT) != entries
          || b.getInt(base + CRC_AT) != crc(b, base, entries)) {
        return null;
      }
      offsets = new long[entries];
      for (int i = 0; i < entries; i++) {
        offsets[i] = b.getLong(base + SIZE + i * 8);
      }
    }
    try {
      int mapIndex = b.getInt(base + 4);
      long mapId = b.getLong(base + 8);
      long dataLength = b.getLong(base + 16);
      RemoteRegion index = RemoteRegion.decode(b.duplicate().position(base + INDEX_AT));
      RemoteRegion data =
          dataLength > 0 ? RemoteRegion.decode(b.duplicate().position(base + DATA_AT)) : null;
      if (data != null && data.length() != dataLength) {
        return null;
      }
      return new DirectorySlot(mapIndex, mapId, index, data, offsets);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  @Override
  public String toString() {
    return "DirectorySlot{map "
        + mapIndex
        + " id "
        + mapId
        + ", data "
        + dataLength
        + " bytes"
        + (entries == null ? "" : ", " + entries.length + " entries inline")
        + "}";
  }
}
