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
 *   0  u32  magic: 'MWS1' (header only), 'MWS2' (entries follow), 'MWS3' (entries and
 *            checksums follow) or 'MWS4' (header only, naming a metadata region); 0 = empty slot
 *   4  u32  map index
 *   8  u64  map id (the map task attempt id)
 *  16  u64  data file length (0 = no data file: every partition empty)
 *  24  u64  index file length; MWS4: metadata region length (16n - 8)
 *  32  ..   index file RemoteRegion encoding (1 segment: 50 bytes); MWS4: the metadata region's
 *  88  ..   data file RemoteRegion encoding, when the data length is positive (up to 3 segments)
 * 240  u32  MWS3/4: checksum algorithm ({@link ChecksumAlgorithm#code()})
 * 248  u32  MWS2/3/4: number of entries n (reduce partitions + 1)
 * 252  u32  MWS2/3: CRC32C of bytes [4, 252), of the entries and of the checksums; MWS4: of
 *            bytes [4, 252)
 * 256  n x u64  MWS2/3: the index file's offsets (Spark's index, as in the file)
 * 256 + 8n  (n - 1) x u64  MWS3: Spark's checksum of each reduce partition, as in its file
 * </pre>
 *
 * <p>An MWS4 slot's metadata region (registered memory the publisher fills once, never changed
 * while registered) holds the n index entries, then the n - 1 checksums, big-endian: a reader reads
 * a block's entries and checksums from it in the batch it would read the index file in ({@link
 * #metadataEntries()}).
 *
 * <p>A directory whose slots have room for checksums ({@link DirectoryPointer#checksums()}) holds
 * MWS3 slots, and MWS2 or MWS1 slots for outputs without a checksum file or with another index
 * length; a directory of headers only with room for checksums (a shuffle of more than {@value
 * #MAX_INLINE_ENTRIES} - 1 reduce partitions) holds MWS4 slots, and MWS1 slots for outputs without
 * checksums. Readers verify only blocks of MWS3 and MWS4 slots.
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
  static final int MAGIC_CHECKSUMS = 0x4d575333; // "MWS3"
  static final int MAGIC_METADATA = 0x4d575334; // "MWS4"

  /**
   * Most reduce partitions whose checksums a metadata region carries (16 MiB of metadata); wider
   * outputs are read unverified.
   */
  public static final int MAX_METADATA_PARTITIONS = 1 << 20;

  private static final int ALGORITHM_AT = 240;
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
  private final OutputChecksums checksums;

  /** MWS4: entries in the metadata region ({@link #index()}), else 0. */
  private final int metadataEntries;

  /** MWS4: the algorithm of the metadata region's checksums, else null. */
  private final ChecksumAlgorithm metadataAlgorithm;

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
    this(mapIndex, mapId, index, data, entries, null);
  }

  /**
   * A slot with the output's index entries and Spark's checksums inline ({@code checksums}: one per
   * reduce partition, so one fewer than entries; null for none). Checksums need entries.
   */
  public DirectorySlot(
      int mapIndex,
      long mapId,
      RemoteRegion index,
      RemoteRegion data,
      long[] entries,
      OutputChecksums checksums) {
    if (checksums != null && (entries == null || checksums.values().length != entries.length - 1)) {
      throw new IllegalArgumentException(
          "checksums: "
              + checksums.values().length
              + " values for "
              + (entries == null ? "no" : String.valueOf(entries.length))
              + " index entries");
    }
    this.checksums = checksums;
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
    this.metadataEntries = 0;
    this.metadataAlgorithm = null;
  }

  /**
   * An MWS4 slot: a header naming the output's metadata region ({@code metadata}: {@code entries}
   * index entries, then {@code entries - 1} checksums of {@code algorithm}, {@link #metadataLength}
   * bytes) in place of its index file.
   */
  public static DirectorySlot withMetadata(
      int mapIndex,
      long mapId,
      RemoteRegion metadata,
      RemoteRegion data,
      int entries,
      ChecksumAlgorithm algorithm) {
    if (entries < 2 || entries - 1 > MAX_METADATA_PARTITIONS || algorithm == null) {
      throw new IllegalArgumentException(
          "metadata of " + entries + " index entries (" + algorithm + ")");
    }
    if (metadata.length() < metadataLength(entries)) {
      throw new IllegalArgumentException(
          "metadata region of "
              + metadata.length()
              + " bytes for "
              + metadataLength(entries)
              + " bytes of metadata");
    }
    return new DirectorySlot(mapIndex, mapId, metadata, data, entries, algorithm);
  }

  private DirectorySlot(
      int mapIndex,
      long mapId,
      RemoteRegion metadata,
      RemoteRegion data,
      int metadataEntries,
      ChecksumAlgorithm algorithm) {
    this.mapIndex = mapIndex;
    this.mapId = mapId;
    this.index = metadata;
    this.data = data;
    this.dataLength = data == null ? 0 : data.length();
    this.entries = null;
    this.checksums = null;
    this.metadataEntries = metadataEntries;
    this.metadataAlgorithm = algorithm;
  }

  /** Bytes of a metadata region holding {@code entries} index entries and their checksums. */
  public static int metadataLength(int entries) {
    return entries * 8 + (entries - 1) * 8;
  }

  /** True when both descriptors fit into a slot. */
  public static boolean fits(RemoteRegion index, RemoteRegion data) {
    return INDEX_AT + index.encodedSize() <= DATA_AT
        && (data == null || DATA_AT + data.encodedSize() <= COUNT_AT);
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

  /**
   * MWS4: index entries n in the metadata region {@link #index()} (bytes [0, 8n)), followed by the
   * n - 1 checksums (bytes [8n, 16n - 8)); 0 for any other slot, whose {@link #index()} is the
   * index file.
   */
  public int metadataEntries() {
    return metadataEntries;
  }

  /** MWS4: the algorithm of the metadata region's checksums; null for any other slot. */
  public ChecksumAlgorithm metadataAlgorithm() {
    return metadataAlgorithm;
  }

  /**
   * Bytes of index entries this slot's {@link #index()} region starts with: the whole index file,
   * or the entries part of an MWS4 metadata region.
   */
  public long indexLength() {
    return metadataEntries > 0 ? metadataEntries * 8L : index.length();
  }

  /**
   * This slot's header keeping {@code sums} (read from its metadata region) as its checksums, for a
   * reader's cache; no inline entries.
   */
  public DirectorySlot withChecksums(OutputChecksums sums) {
    return new DirectorySlot(this, sums);
  }

  /** The inline index entries (Spark's offsets, unchecked), or null when the slot has none. */
  public long[] entries() {
    return entries;
  }

  /** Spark's checksums of the output's reduce partitions, or null when the slot has none. */
  public OutputChecksums checksums() {
    return checksums;
  }

  /**
   * This slot without its inline entries (what a reader keeps of it apart from its index); its
   * checksums stay.
   */
  public DirectorySlot withoutEntries() {
    return entries == null ? this : new DirectorySlot(this, checksums);
  }

  /** A header-only copy of {@code s} keeping {@code c}, which then need not match any entries. */
  private DirectorySlot(DirectorySlot s, OutputChecksums c) {
    this.mapIndex = s.mapIndex;
    this.mapId = s.mapId;
    this.index = s.index;
    this.data = s.data;
    this.dataLength = s.dataLength;
    this.entries = null;
    this.checksums = c;
    this.metadataEntries = s.metadataEntries;
    this.metadataAlgorithm = s.metadataAlgorithm;
  }

  /**
   * Writes this slot into {@code slot} ({@link ChunkLayout#readLength} bytes at its position 0).
   */
  void writeTo(ByteBuffer slot) {
    ByteBuffer b = slot.duplicate().order(ByteOrder.BIG_ENDIAN);
    b.putInt(0, 0);
    b.putInt(4, mapIndex);
    b.putLong(8, mapId);
    b.putLong(16, dataLength);
    b.putLong(24, metadataEntries > 0 ? metadataLength(metadataEntries) : index.length());
    index.encode(b.duplicate().position(INDEX_AT));
    if (data != null) {
      data.encode(b.duplicate().position(DATA_AT));
    }
    if (metadataEntries > 0) {
      b.putInt(ALGORITHM_AT, metadataAlgorithm.code());
      b.putInt(COUNT_AT, metadataEntries);
      b.putInt(CRC_AT, crc(b, 0, 0, false));
      b.putInt(0, MAGIC_METADATA);
    } else if (entries != null) {
      b.putInt(COUNT_AT, entries.length);
      for (int i = 0; i < entries.length; i++) {
        b.putLong(SIZE + i * 8, entries[i]);
      }
      if (checksums != null) {
        b.putInt(ALGORITHM_AT, checksums.algorithm().code());
        long[] v = checksums.values();
        for (int i = 0; i < v.length; i++) {
          b.putLong(SIZE + (entries.length + i) * 8, v[i]);
        }
      }
      b.putInt(CRC_AT, crc(b, 0, entries.length, checksums != null));
      b.putInt(0, checksums != null ? MAGIC_CHECKSUMS : MAGIC_INLINE);
    } else {
      b.putInt(0, MAGIC);
    }
  }

  private static int crc(ByteBuffer b, int base, int entries, boolean checksums) {
    CRC32C crc = new CRC32C();
    crc.update(b.duplicate().position(base + 4).limit(base + CRC_AT));
    crc.update(
        b.duplicate()
            .position(base + SIZE)
            .limit(base + ChunkLayout.readLength(entries, checksums)));
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
    return read(bytes, entries, false);
  }

  /**
   * Decodes a slot read from a peer whose directory keeps {@code entries} inline entries per slot
   * and, with {@code checksums}, room for checksums: a slot of any kind that fits (MWS3 only where
   * the directory has room for checksums).
   *
   * @return the slot (with its entries and checksums when it has them), or null when it is empty,
   *     not of this directory's layout, torn or not a valid slot
   */
  public static DirectorySlot read(ByteBuffer bytes, int entries, boolean checksums) {
    if (entries < 0 || entries > MAX_INLINE_ENTRIES) {
      return null;
    }
    return decode(bytes, entries, checksums);
  }

  private static DirectorySlot decode(ByteBuffer bytes, int entries) {
    return decode(bytes, entries, false);
  }

  private static DirectorySlot decode(ByteBuffer bytes, int entries, boolean roomForChecksums) {
    if (bytes.remaining() < SIZE) {
      return null;
    }
    ByteBuffer b = bytes.duplicate().order(ByteOrder.BIG_ENDIAN);
    int base = b.position();
    int magic = b.getInt(base);
    if (magic == MAGIC_METADATA) {
      return entries < 0 || (entries == 0 && roomForChecksums) ? decodeMetadata(b, base) : null;
    }
    boolean withChecksums = magic == MAGIC_CHECKSUMS;
    boolean inline = magic == MAGIC_INLINE || withChecksums;
    if ((magic != MAGIC && !inline)
        || (entries == 0 && inline)
        || (withChecksums && !roomForChecksums && entries >= 0)) {
      return null;
    }
    long[] offsets = null;
    OutputChecksums sums = null;
    if (inline && entries > 0) {
      if (b.remaining() < ChunkLayout.readLength(entries, withChecksums)
          || b.getInt(base + COUNT_AT) != entries
          || b.getInt(base + CRC_AT) != crc(b, base, entries, withChecksums)) {
        return null;
      }
      offsets = new long[entries];
      for (int i = 0; i < entries; i++) {
        offsets[i] = b.getLong(base + SIZE + i * 8);
      }
      if (withChecksums) {
        ChecksumAlgorithm a = ChecksumAlgorithm.ofCode(b.getInt(base + ALGORITHM_AT));
        if (a == null) {
          return null;
        }
        long[] v = new long[entries - 1];
        for (int i = 0; i < v.length; i++) {
          v[i] = b.getLong(base + SIZE + (entries + i) * 8);
        }
        sums = new OutputChecksums(a, v);
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
      return new DirectorySlot(mapIndex, mapId, index, data, offsets, sums);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private static DirectorySlot decodeMetadata(ByteBuffer b, int base) {
    int n = b.getInt(base + COUNT_AT);
    ChecksumAlgorithm a = ChecksumAlgorithm.ofCode(b.getInt(base + ALGORITHM_AT));
    if (a == null
        || n < 2
        || n - 1 > MAX_METADATA_PARTITIONS
        || b.getLong(base + 24) != metadataLength(n)
        || b.getInt(base + CRC_AT) != crc(b, base, 0, false)) {
      return null;
    }
    try {
      int mapIndex = b.getInt(base + 4);
      long mapId = b.getLong(base + 8);
      long dataLength = b.getLong(base + 16);
      RemoteRegion metadata = RemoteRegion.decode(b.duplicate().position(base + INDEX_AT));
      RemoteRegion data =
          dataLength > 0 ? RemoteRegion.decode(b.duplicate().position(base + DATA_AT)) : null;
      if ((data != null && data.length() != dataLength) || metadata.length() < metadataLength(n)) {
        return null;
      }
      return new DirectorySlot(mapIndex, mapId, metadata, data, n, a);
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
        + (checksums == null ? "" : ", " + checksums.algorithm() + " checksums")
        + (metadataEntries == 0
            ? ""
            : ", metadata region of " + metadataEntries + " entries, " + metadataAlgorithm)
        + "}";
  }
}
