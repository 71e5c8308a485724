package io.memwire.shuffle.directory;

/**
 * Charges the memory of a {@link ShuffleDirectory}'s chunks to whoever the directory belongs to (a
 * shuffle service charges an application's and its user's byte quotas): a chunk costs its full size
 * however few slots are used, so a holder of many sparse chunks pays for them.
 */
public interface ChunkQuota {
  /** Charges nothing: an executor's own directory is bounded by its node's budget only. */
  ChunkQuota NONE =
      new ChunkQuota() {
        @Override
        public void take(long bytes) {}

        @Override
        public void give(long bytes) {}
      };

  /**
   * Charges a new chunk of {@code bytes} before it is allocated.
   *
   * @throws ChunkQuotaException when the holder's quota has no room for it
   */
  void take(long bytes);

  /** Gives back a chunk's bytes once its memory is freed; exactly once per {@link #take}. */
  void give(long bytes);
}
