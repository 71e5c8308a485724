package io.memwire.transfer;

import java.util.Objects;

/**
 * One read of {@code length} bytes at logical {@code offset} of a remote region. By default the
 * bytes land in a pooled {@link TransferBuffer}; {@link #into} names a caller-owned registered
 * destination instead.
 */
public final class ReadRequest {
  private final RemoteRegion region;
  private final long offset;
  private final int length;
  private final MemoryRegion destination;
  private final long destinationOffset;

  private ReadRequest(
      RemoteRegion region, long offset, int length, MemoryRegion destination, long destOffset) {
    this.region = Objects.requireNonNull(region, "region");
    if (length <= 0) {
      throw new IllegalArgumentException("read length must be positive: " + length);
    }
    if (offset < 0) {
      throw new IllegalArgumentException("read offset must not be negative: " + offset);
    }
    if (offset > region.length() - length) {
      throw new IllegalArgumentException(
          "read ["
              + offset
              + ", +"
              + length
              + ") lies outside the region's "
              + region.length()
              + " bytes: "
              + region);
    }
    this.offset = offset;
    this.length = length;
    this.destination = destination;
    this.destinationOffset = destOffset;
  }

  public static ReadRequest of(RemoteRegion region, long offset, int length) {
    return new ReadRequest(region, offset, length, null, 0);
  }

  public static ReadRequest of(RegionDescriptor segment, long offset, int length) {
    return of(RemoteRegion.of(segment), offset, length);
  }

  /**
   * The same read landing in {@code destination} (a region registered from a direct buffer on the
   * reading node) at {@code destinationOffset}. The result's release does not free it.
   */
  public ReadRequest into(MemoryRegion destination, long destinationOffset) {
    if (destination.isFileBacked()) {
      throw new IllegalArgumentException("a file mapping is read-only and cannot be a destination");
    }
    if (destinationOffset < 0 || destinationOffset > destination.length() - length) {
      throw new IllegalArgumentException(
          "destination range ["
              + destinationOffset
              + ", +"
              + length
              + ") lies outside "
              + destination);
    }
    return new ReadRequest(region, offset, length, destination, destinationOffset);
  }

  public RemoteRegion region() {
    return region;
  }

  public long offset() {
    return offset;
  }

  public int length() {
    return length;
  }

  /** The caller's destination, or null for a pooled buffer. */
  public MemoryRegion destination() {
    return destination;
  }

  public long destinationOffset() {
    return destinationOffset;
  }

  @Override
  public String toString() {
    return "ReadRequest{[" + offset + ", +" + length + ") of " + region + "}";
  }
}
