package io.memwire.transfer;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A logical byte range on one remote node, made of one or more registered segments laid end to end
 * (a file over the provider's segment limit is registered as several segments). Reads address it by
 * logical offset; the connection splits reads that cross segment boundaries.
 *
 * <p>Encoding: u16 segment count, then each segment's {@link RegionDescriptor} encoding.
 */
public final class RemoteRegion {
  private final List<RegionDescriptor> segments;
  private final long[] starts;
  private final long length;

  public RemoteRegion(List<RegionDescriptor> segments) {
    if (segments.isEmpty()) {
      throw new IllegalArgumentException("a remote region has at least one segment");
    }
    if (segments.size() > 0xffff) {
      throw new IllegalArgumentException("too many segments: " + segments.size());
    }
    InetSocketAddress node = segments.get(0).node();
    this.segments = Collections.unmodifiableList(new ArrayList<>(segments));
    this.starts = new long[segments.size()];
    long total = 0;
    for (int i = 0; i < segments.size(); i++) {
      RegionDescriptor d = segments.get(i);
      if (!d.node().equals(node)) {
        throw new IllegalArgumentException(
            "segments of one region must be on one node: " + segments);
      }
      starts[i] = total;
      total += d.length();
    }
    this.length = total;
  }

  /** A region of exactly one segment. */
  public static RemoteRegion of(RegionDescriptor descriptor) {
    return new RemoteRegion(List.of(descriptor));
  }

  public List<RegionDescriptor> segments() {
    return segments;
  }

  public InetSocketAddress node() {
    return segments.get(0).node();
  }

  public long length() {
    return length;
  }

  /** Index of the segment holding logical offset {@code offset} (0 &lt;= offset &lt; length). */
  int segmentIndex(long offset) {
    int lo = 0;
    int hi = starts.length - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (starts[mid] <= offset) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /** Logical offset at which segment {@code index} starts. */
  long segmentStart(int index) {
    return starts[index];
  }

  public int encodedSize() {
    return 2 + segments.size() * RegionDescriptor.ENCODED_SIZE;
  }

  public void encode(ByteBuffer out) {
    out.putShort((short) segments.size());
    for (RegionDescriptor d : segments) {
      d.encode(out);
    }
  }

  public byte[] toBytes() {
    ByteBuffer b = ByteBuffer.allocate(encodedSize());
    encode(b);
    return b.array();
  }

  public static RemoteRegion decode(ByteBuffer in) {
    if (in.remaining() < 2) {
      throw new IllegalArgumentException("remote region encoding truncated");
    }
    int n = Short.toUnsignedInt(in.getShort());
    List<RegionDescriptor> list = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      list.add(RegionDescriptor.decode(in));
    }
    return new RemoteRegion(list);
  }

  public static RemoteRegion fromBytes(byte[] bytes) {
    return decode(ByteBuffer.wrap(bytes));
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RemoteRegion && ((RemoteRegion) o).segments.equals(segments);
  }

  @Override
  public int hashCode() {
    return segments.hashCode();
  }

  @Override
  public String toString() {
    return segments.size() == 1
        ? segments.get(0).toString()
        : segments.size() + " segments, " + length + " bytes, first " + segments.get(0);
  }
}
