package io.memwire.transfer.memory;

/**
 * A reservation would take an allocator past its limit. Nothing was reserved: the allocators below
 * the one whose limit refused were rolled back. {@link #allocator()} names the one that refused,
 * with its figures, so a caller can tell its own limit from a parent's (the node's registration
 * budget).
 */
public final class LimitExceededException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient MemoryAllocator allocator;
  private final long reserved;
  private final long requested;
  private final long limit;

  LimitExceededException(MemoryAllocator allocator, long reserved, long requested, long limit) {
    super(
        "limit of allocator '"
            + allocator.path()
            + "' exceeded: "
            + reserved
            + " bytes reserved + "
            + requested
            + " requested > limit "
            + limit);
    this.allocator = allocator;
    this.reserved = reserved;
    this.requested = requested;
    this.limit = limit;
  }

  /** The allocator whose limit refused. */
  public MemoryAllocator allocator() {
    return allocator;
  }

  /** Bytes it had reserved when it refused. */
  public long reserved() {
    return reserved;
  }

  /** Bytes asked for. */
  public long requested() {
    return requested;
  }

  /** Its limit. */
  public long limit() {
    return limit;
  }
}
