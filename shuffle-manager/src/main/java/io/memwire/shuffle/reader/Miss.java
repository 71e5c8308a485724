package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import java.util.List;

/**
 * Blocks a stage could not locate, and what should become of them. Stages only report misses;
 * {@link BlockEnds#settle} ends the blocks, in the order the stage reported them.
 */
sealed interface Miss {
  List<Wanted> blocks();

  /**
   * The blocks go to Spark's own client (counted as {@code cause}); {@code error} is what made the
   * read fail, or null (for example a block too large for one read).
   */
  record Fallback(List<Wanted> blocks, FallbackCause cause, String reason, Throwable error)
      implements Miss {}

  /** The blocks fail as fetch failures, so Spark reruns the map stage. */
  record Failure(List<Wanted> blocks, Throwable error) implements Miss {}
}
