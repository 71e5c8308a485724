package io.memwire.shuffle.reader;

import java.util.List;

/**
 * What one step of a stage produced: the values it found (handed to the next stage) and the blocks
 * it could not locate ({@link Miss}, ended by {@link BlockEnds#settle} before the next stage runs).
 */
record Found<T>(List<T> found, List<Miss> misses) {
  Found {
    found = List.copyOf(found);
    misses = List.copyOf(misses);
  }

  /** Nothing found: the blocks of {@code miss} are all the step had. */
  static <T> Found<T> none(Miss miss) {
    return new Found<>(List.of(), List.of(miss));
  }
}
