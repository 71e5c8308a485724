package io.memwire.shuffle.directory;

/**
 * A {@link ChunkQuota} had no room for a new directory chunk; the message says whose quota and the
 * key that sets it. The map output that needed the chunk is not published.
 */
public final class ChunkQuotaException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ChunkQuotaException(String message) {
    super(message);
  }
}
