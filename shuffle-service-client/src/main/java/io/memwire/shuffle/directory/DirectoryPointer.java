package io.memwire.shuffle.directory;

import io.memwire.transfer.RemoteRegion;
import java.util.Base64;
import java.util.Optional;

/**
 * Where a reducer finds the directory chunk that holds a map output's slot, and how the chunk is
 * laid out: carried in the MapStatus location's {@code topologyInfo} after any topology information
 * Spark had put there ({@code <original>|memwire...}), as {@code
 * memwire2:<chunk>:<entries>:<base64url region>} for a chunk whose slots carry {@code entries}
 * index entries inline, {@code memwire3:<chunk>:<entries>:<base64url region>} for one whose slots
 * also have room for Spark's checksums ({@link #checksums()}), {@code memwire1:<chunk>:<base64url
 * region>} for one of headers only ({@link #entries()} 0), or {@code memwire4:<chunk>:<base64url
 * region>} for one of headers only whose slots may name a metadata region holding the output's
 * entries and checksums (MWS4 slots; {@link #checksums()} true). A reader that does not know a tag
 * finds no pointer and reads through Spark. From the pointer and a map index alone a reducer
 * computes where the slot and its entries lie, so it reads both in one read.
 *
 * <p>All map outputs of one executor, shuffle and chunk share the pointer, so Spark still groups
 * their blocks into one fetch request per executor.
 */
public final class DirectoryPointer {
  static final String TAG = "memwire1:";
  static final String TAG_INLINE = "memwire2:";
  static final String TAG_CHECKSUMS = "memwire3:";
  static final String TAG_METADATA = "memwire4:";
  private static final char SEPARATOR = '|';

  private final int chunk;
  private final int entries;
  private final boolean checksums;
  private final RemoteRegion region;

  /** A pointer to a chunk of slot headers only ({@value ShuffleDirectory#SLOTS_PER_CHUNK}). */
  public DirectoryPointer(int chunk, RemoteRegion region) {
    this(chunk, 0, region);
  }

  /**
   * A pointer to a chunk whose slots carry {@code entries} inline index entries (0: none).
   *
   * @throws IllegalArgumentException when {@code entries} is not 0 or 2 to {@value
   *     DirectorySlot#MAX_INLINE_ENTRIES}
   */
  public DirectoryPointer(int chunk, int entries, RemoteRegion region) {
    this(chunk, entries, false, region);
  }

  /**
   * A pointer to a chunk whose slots carry {@code entries} inline index entries and, with {@code
   * checksums}, room for a checksum per reduce partition; with {@code entries} 0 and {@code
   * checksums}, a chunk of headers only whose slots may name metadata regions (MWS4).
   *
   * @throws IllegalArgumentException when {@code entries} is not 0 or 2 to {@value
   *     DirectorySlot#MAX_INLINE_ENTRIES}
   */
  public DirectoryPointer(int chunk, int entries, boolean checksums, RemoteRegion region) {
    this.checksums = checksums;
    if (entries != 0 && (entries < 2 || entries > DirectorySlot.MAX_INLINE_ENTRIES)) {
      throw new IllegalArgumentException("inline entries per slot: " + entries);
    }
    this.chunk = chunk;
    this.entries = entries;
    this.region = region;
  }

  /** Index of the chunk: it holds map indexes [chunk * slots, (chunk + 1) * slots). */
  public int chunk() {
    return chunk;
  }

  /** Index entries inline after each slot (reduce partitions + 1), or 0 for headers only. */
  public int entries() {
    return entries;
  }

  /**
   * Whether the chunk's slots have room for Spark's checksums after their entries, or, in a chunk
   * of headers only, may name metadata regions holding them.
   */
  public boolean checksums() {
    return checksums;
  }

  /** Slots in this chunk: map indexes [chunk * this, (chunk + 1) * this). */
  public int slotsPerChunk() {
    return ChunkLayout.slotsPerChunk(entries, checksums);
  }

  /**
   * Bytes a reducer reads for one slot: the header and, when inline, every entry (and checksum).
   */
  public int slotReadLength() {
    return ChunkLayout.readLength(entries, checksums);
  }

  /** The chunk's registered memory on the serving executor. */
  public RemoteRegion region() {
    return region;
  }

  /** Byte offset of {@code mapIndex}'s slot within this chunk, or -1 if not in this chunk. */
  public long slotOffset(int mapIndex) {
    int slots = slotsPerChunk();
    long first = (long) chunk * slots;
    if (mapIndex < first || mapIndex >= first + slots) {
      return -1;
    }
    long off = (mapIndex - first) * ChunkLayout.stride(entries, checksums);
    return off + slotReadLength() <= region.length() ? off : -1;
  }

  /** The topologyInfo string: {@code original} (if any) followed by this pointer. */
  public String toTopologyInfo(String original) {
    String layout =
        entries == 0
            ? (checksums ? TAG_METADATA : TAG) + chunk
            : (checksums ? TAG_CHECKSUMS : TAG_INLINE) + chunk + ":" + entries;
    String me =
        layout + ":" + Base64.getUrlEncoder().withoutPadding().encodeToString(region.toBytes());
    return original == null || original.isEmpty() ? me : original + SEPARATOR + me;
  }

  /** Parses a topologyInfo; empty when it carries no (valid) pointer. */
  public static Optional<DirectoryPointer> fromTopologyInfo(String topologyInfo) {
    if (topologyInfo == null) {
      return Optional.empty();
    }
    int at =
        Math.max(
            Math.max(topologyInfo.lastIndexOf(TAG), topologyInfo.lastIndexOf(TAG_METADATA)),
            Math.max(
                topologyInfo.lastIndexOf(TAG_INLINE), topologyInfo.lastIndexOf(TAG_CHECKSUMS)));
    if (at < 0 || (at > 0 && topologyInfo.charAt(at - 1) != SEPARATOR)) {
      return Optional.empty();
    }
    boolean metadata = topologyInfo.startsWith(TAG_METADATA, at);
    boolean sums = metadata || topologyInfo.startsWith(TAG_CHECKSUMS, at);
    boolean inline = !metadata && (sums || topologyInfo.startsWith(TAG_INLINE, at));
    String rest = topologyInfo.substring(at + TAG.length());
    try {
      int colon = rest.indexOf(':');
      int chunk = Integer.parseInt(rest.substring(0, colon));
      int entries = 0;
      if (inline) {
        rest = rest.substring(colon + 1);
        colon = rest.indexOf(':');
        entries = Integer.parseInt(rest.substring(0, colon));
      }
      RemoteRegion region =
          RemoteRegion.fromBytes(Base64.getUrlDecoder().decode(rest.substring(colon + 1)));
      return chunk < 0 || (inline && entries == 0)
          ? Optional.empty()
          : Optional.of(new DirectoryPointer(chunk, entries, sums, region));
    } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
      return Optional.empty();
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DirectoryPointer
        && ((DirectoryPointer) o).chunk == chunk
        && ((DirectoryPointer) o).entries == entries
        && ((DirectoryPointer) o).checksums == checksums
        && ((DirectoryPointer) o).region.equals(region);
  }

  @Override
  public int hashCode() {
    return ((chunk * 31 + entries) * 31 + (checksums ? 1 : 0)) * 31 + region.hashCode();
  }

  @Override
  public String toString() {
    return "DirectoryPointer{chunk "
        + chunk
        + (entries == 0 ? "" : ", " + entries + " entries inline")
        + (checksums ? (entries == 0 ? ", metadata regions" : ", checksums") : "")
        + ", "
        + region
        + "}";
  }
}
