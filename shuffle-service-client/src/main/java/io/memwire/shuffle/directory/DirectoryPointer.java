package io.memwire.shuffle.directory;

import io.memwire.transfer.RemoteRegion;
import java.util.Base64;
import java.util.Optional;

/**
 * Where a reducer finds the directory chunk that holds a map output's slot: carried in the
 * MapStatus location's {@code topologyInfo} as {@code memwire1:<chunk>:<base64url region>}, after
 * any topology information Spark had put there ({@code <original>|memwire1:...}).
 *
 * <p>All map outputs of one executor, shuffle and chunk share the pointer, so Spark still groups
 * their blocks into one fetch request per executor.
 */
public final class DirectoryPointer {
  static final String TAG = "memwire1:";
  private static final char SEPARATOR = '|';

  private final int chunk;
  private final RemoteRegion region;

  public DirectoryPointer(int chunk, RemoteRegion region) {
    this.chunk = chunk;
    this.region = region;
  }

  /** Index of the chunk: it holds map indexes [chunk * slots, (chunk + 1) * slots). */
  public int chunk() {
    return chunk;
  }

  /** The chunk's registered memory on the serving executor. */
  public RemoteRegion region() {
    return region;
  }

  /** Byte offset of {@code mapIndex}'s slot within this chunk, or -1 if not in this chunk. */
  public long slotOffset(int mapIndex) {
    long first = (long) chunk * ShuffleDirectory.SLOTS_PER_CHUNK;
    if (mapIndex < first || mapIndex >= first + ShuffleDirectory.SLOTS_PER_CHUNK) {
      return -1;
    }
    long off = (mapIndex - first) * DirectorySlot.SIZE;
    return off + DirectorySlot.SIZE <= region.length() ? off : -1;
  }

  /** The topologyInfo string: {@code original} (if any) followed by this pointer. */
  public String toTopologyInfo(String original) {
    String me =
        TAG
            + chunk
            + ":"
            + Base64.getUrlEncoder().withoutPadding().encodeToString(region.toBytes());
    return original == null || original.isEmpty() ? me : original + SEPARATOR + me;
  }

  /** Parses a topologyInfo; empty when it carries no (valid) pointer. */
  public static Optional<DirectoryPointer> fromTopologyInfo(String topologyInfo) {
    if (topologyInfo == null) {
      return Optional.empty();
    }
    int at = topologyInfo.lastIndexOf(TAG);
    if (at < 0 || (at > 0 && topologyInfo.charAt(at - 1) != SEPARATOR)) {
      return Optional.empty();
    }
    String rest = topologyInfo.substring(at + TAG.length());
    int colon = rest.indexOf(':');
    if (colon <= 0) {
      return Optional.empty();
    }
    try {
      int chunk = Integer.parseInt(rest.substring(0, colon));
      RemoteRegion region =
          RemoteRegion.fromBytes(Base64.getUrlDecoder().decode(rest.substring(colon + 1)));
      return chunk < 0 ? Optional.empty() : Optional.of(new DirectoryPointer(chunk, region));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DirectoryPointer
        && ((DirectoryPointer) o).chunk == chunk
        && ((DirectoryPointer) o).region.equals(region);
  }

  @Override
  public int hashCode() {
    return chunk * 31 + region.hashCode();
  }

  @Override
  public String toString() {
    return "DirectoryPointer{chunk " + chunk + ", " + region + "}";
  }
}
