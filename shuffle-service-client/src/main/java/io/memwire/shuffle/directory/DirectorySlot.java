package io.memwire.shuffle.directory;

import io.memwire.transfer.RemoteRegion;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One map output's entry in a shuffle directory: {@value #SIZE} bytes, big-endian.
 *
 * <pre>
 *   0  u32  magic 'MWS1' (0 = empty slot)
 *   4  u32  map index
 *   8  u64  map id (the map task attempt id)
 *  16  u64  data file length (0 = no data file: every partition empty)
 *  24  u64  index file length
 *  32  ..   index file RemoteRegion encoding (1 segment: 50 bytes)
 *  88  ..   data file RemoteRegion encoding, when the data length is positive (up to 3 segments)
 * </pre>
 *
 * <p>The magic is written last, so a slot is either empty, stale (another map id) or complete.
 */
public final class DirectorySlot {
  /** Bytes per slot. */
  public static final int SIZE = 256;

  static final int MAGIC = 0x4d575331; // "MWS1"
  private static final int INDEX_AT = 32;
  private static final int DATA_AT = 88;

  private final int mapIndex;
  private final long mapId;
  private final RemoteRegion index;
  private final RemoteRegion data;
  private final long dataLength;

  public DirectorySlot(int mapIndex, long mapId, RemoteRegion index, RemoteRegion data) {
    this.mapIndex = mapIndex;
    this.mapId = mapId;
    this.index = index;
    this.data = data;
    this.dataLength = data == null ? 0 : data.length();
  }

  /** True when both descriptors fit into a slot. */
  public static boolean fits(RemoteRegion index, RemoteRegion data) {
    return INDEX_AT + index.encodedSize() <= DATA_AT
        && (data == null || DATA_AT + data.encodedSize() <= SIZE);
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

  /** Writes this slot into {@code slot} (exactly {@value #SIZE} bytes at its position 0). */
  void writeTo(ByteBuffer slot) {
    ByteBuffer b = slot.duplicate().order(ByteOrder.BIG_ENDIAN);
    b.putInt(0, 0);
    b.putInt(4, mapIndex);
    b.putLong(8, mapId);
    b.putLong(16, dataLength);
    b.putLong(24, index.length());
    index.encode(b.position(INDEX_AT));
    if (data != null) {
      data.encode(b.position(DATA_AT));
    }
    b.putInt(0, MAGIC);
  }

  /**
   * Decodes a slot read from a peer.
   *
   * @return the slot, or null when it is empty or not a valid slot
   */
  public static DirectorySlot read(ByteBuffer bytes) {
    if (bytes.remaining() < SIZE) {
      return null;
    }
    ByteBuffer b = bytes.duplicate().order(ByteOrder.BIG_ENDIAN);
    int base = b.position();
    if (b.getInt(base) != MAGIC) {
      return null;
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
      return new DirectorySlot(mapIndex, mapId, index, data);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  @Override
  public String toString() {
    return "DirectorySlot{map " + mapIndex + " id " + mapId + ", data " + dataLength + " bytes}";
  }
}
