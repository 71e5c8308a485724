package io.memwire.transfer;

import java.net.InetSocketAddress;

/**
 * The remote node refused a read: the key names no live region, the range lies outside the region,
 * the region was closed, or its file was truncated under it. The connection stays usable; only the
 * affected read fails.
 */
public final class RemoteAccessException extends TransferException {
  private static final long serialVersionUID = 1L;

  /** Why the remote side refused the read. */
  public enum Reason {
    /** No live region has this key (never registered, or closed long ago). */
    UNKNOWN_KEY,
    /** The requested range is not inside the region. */
    OUT_OF_BOUNDS,
    /** The region was closed (deregistered) on the serving node. */
    REGION_CLOSED,
    /** The request itself was invalid (for example a zero length). */
    INVALID_REQUEST,
    /** The remote NIC reported an access error (verbs); the exact cause is not known. */
    ACCESS_ERROR,
    /**
     * The file under a file region became shorter than the region on the serving node (truncated by
     * someone with write access to it while registered); its bytes cannot be served.
     */
    FILE_SHRUNK
  }

  private final Reason reason;
  private final transient RegionDescriptor descriptor;

  public RemoteAccessException(
      Reason reason, String detail, RegionDescriptor descriptor, InetSocketAddress peer) {
    super(
        "remote access refused by "
            + peer
            + " ("
            + reason
            + "): "
            + detail
            + "; region "
            + descriptor,
        peer,
        null);
    this.reason = reason;
    this.descriptor = descriptor;
  }

  public Reason reason() {
    return reason;
  }

  /** The descriptor of the region the read addressed. */
  public RegionDescriptor descriptor() {
    return descriptor;
  }
}
