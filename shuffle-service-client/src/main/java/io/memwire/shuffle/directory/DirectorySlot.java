package io.memwire.shuffle.directory;

import io.memwire.transfer.RemoteRegion;
import java.nio.ByteBuffer;

/**
 * One map output's entry in a shuffle directory: its map index and map id, the regions of its index
 * and data files (or, MWS4, of its metadata region), and in a directory with inline entries the
 * output's index entries and Spark's checksums. A value; its bytes (a {@value #SIZE}-byte header,
 * big-endian, then the entries) are written and checked by {@link SlotCodec}, whose javadoc holds
 * the layout.
 *
 * <p>A directory whose slots have room for checksums ({@link DirectoryPointer#checksums()}) holds
 * MWS3 slots, and MWS2 or MWS1 slots for outputs without a checksum file or with another index
 * length; a directory of headers only with room for checksums (a shuffle of more than {@value
 * #MAX_INLINE_ENTRIES} - 1 reduce partitions) holds MWS4 slots, and MWS1 slots for outputs without
 * checksums. Readers verify only blocks of MWS3 and MWS4 slots.
 */
public final class DirectorySlot {
  /** Bytes of a slot's header (the whole slot in a directory without inline entries). */
  public static final int SIZE = 256;

  /**
   * Most index entries (reduce partitions + 1) kept inline next to a slot: 8 KiB; a shuffle with
   * more reduce partitions gets a directory of headers only.
   */
  public static final int MAX_INLINE_ENTRIES = 1024;

  /**
   * Most reduce partitions whose checksums a metadata region carries (16 MiB of metadata); wider
   * outputs are read unverified.
   */
  public static final int MAX_METADATA_PARTITIONS = 1 << 20;

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

  /** An MWS4 slot, unchecked (the codec checked what it decoded). */
  DirectorySlot(
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
    return SlotCodec.fits(index, data);
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
   * Decodes a slot's header read from a peer, of either kind, without its entries.
   *
   * @return the slot, or null when it is empty or not a valid slot
   */
  public static DirectorySlot read(ByteBuffer bytes) {
    return SlotCodec.decode(bytes, -1, false);
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
    return SlotCodec.decode(bytes, entries, checksums);
  }

  /**
   * Writes this slot into {@code slot} ({@link ChunkLayout#readLength} bytes at its position 0).
   */
  void writeTo(ByteBuffer slot) {
    SlotCodec.write(this, slot);
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
