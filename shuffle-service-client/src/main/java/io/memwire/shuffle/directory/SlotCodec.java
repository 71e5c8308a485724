package io.memwire.shuffle.directory;

import io.memwire.transfer.RemoteRegion;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The bytes of a {@link DirectorySlot}: writes one into a chunk and decodes what a reader read,
 * refusing empty, torn and foreign slots. Layout, big-endian:
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
 * DirectorySlot#metadataEntries()}).
 *
 * <p>The magic is written last, so a slot is either empty, stale (another map id) or complete. A
 * read that raced a republish of the same map index (torn: old header, new entries) fails the CRC
 * and is treated as stale, so a reader never uses entries of another output.
 */
final class SlotCodec {
  private static final int MAGIC = 0x4d575331; // "MWS1"
  private static final int MAGIC_INLINE = 0x4d575332; // "MWS2"
  private static final int MAGIC_CHECKSUMS = 0x4d575333; // "MWS3"
  private static final int MAGIC_METADATA = 0x4d575334; // "MWS4"

  private static final int ALGORITHM_AT = 240;
  private static final int INDEX_AT = 32;
  private static final int DATA_AT = 88;
  private static final int COUNT_AT = 248;
  private static final int CRC_AT = 252;

  private SlotCodec() {}

  /** True when both descriptors fit into a slot's header. */
  static boolean fits(RemoteRegion index, RemoteRegion data) {
    return INDEX_AT + index.encodedSize() <= DATA_AT
        && (data == null || DATA_AT + data.encodedSize() <= COUNT_AT);
  }

  /**
   * Writes {@code s} into {@code slot} ({@link ChunkLayout#readLength} bytes at its position 0).
   */
  static void write(DirectorySlot s, ByteBuffer slot) {
    ByteBuffer b = slot.duplicate().order(ByteOrder.BIG_ENDIAN);
    RemoteRegion index = s.index();
    RemoteRegion data = s.data();
    int metadataEntries = s.metadataEntries();
    long[] entries = s.entries();
    OutputChecksums checksums = s.checksums();
    b.putInt(0, 0);
    b.putInt(4, s.mapIndex());
    b.putLong(8, s.mapId());
    b.putLong(16, s.dataLength());
    b.putLong(
        24, metadataEntries > 0 ? DirectorySlot.metadataLength(metadataEntries) : index.length());
    index.encode(b.duplicate().position(INDEX_AT));
    if (data != null) {
      data.encode(b.duplicate().position(DATA_AT));
    }
    if (metadataEntries > 0) {
      b.putInt(ALGORITHM_AT, s.metadataAlgorithm().code());
      b.putInt(COUNT_AT, metadataEntries);
      b.putInt(CRC_AT, crc(b, 0, 0, false));
      b.putInt(0, MAGIC_METADATA);
    } else if (entries != null) {
      b.putInt(COUNT_AT, entries.length);
      for (int i = 0; i < entries.length; i++) {
        b.putLong(DirectorySlot.SIZE + i * 8, entries[i]);
      }
      if (checksums != null) {
        b.putInt(ALGORITHM_AT, checksums.algorithm().code());
        long[] v = checksums.values();
        for (int i = 0; i < v.length; i++) {
          b.putLong(DirectorySlot.SIZE + (entries.length + i) * 8, v[i]);
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
            .position(base + DirectorySlot.SIZE)
            .limit(base + ChunkLayout.readLength(entries, checksums)));
    return (int) crc.getValue();
  }

  /**
   * Decodes a slot read from a peer whose directory keeps {@code entries} inline entries per slot
   * (-1: any, header only) and, with {@code roomForChecksums}, room for checksums.
   *
   * @return the slot, or null when it is empty, not of that layout, torn or not a valid slot
   */
  static DirectorySlot decode(ByteBuffer bytes, int entries, boolean roomForChecksums) {
    if (bytes.remaining() < DirectorySlot.SIZE) {
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
        offsets[i] = b.getLong(base + DirectorySlot.SIZE + i * 8);
      }
      if (withChecksums) {
        ChecksumAlgorithm a = ChecksumAlgorithm.ofCode(b.getInt(base + ALGORITHM_AT));
        if (a == null) {
          return null;
        }
        long[] v = new long[entries - 1];
        for (int i = 0; i < v.length; i++) {
          v[i] = b.getLong(base + DirectorySlot.SIZE + (entries + i) * 8);
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
        || n - 1 > DirectorySlot.MAX_METADATA_PARTITIONS
        || b.getLong(base + 24) != DirectorySlot.metadataLength(n)
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
      if ((data != null && data.length() != dataLength)
          || metadata.length() < DirectorySlot.metadataLength(n)) {
        return null;
      }
      return new DirectorySlot(mapIndex, mapId, metadata, data, n, a);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }
}
