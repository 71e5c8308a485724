package io.memwire.shuffle.reader;

import java.nio.ByteBuffer;

/**
 * Sees the bytes of each data read of a verified block as they arrive, before they are checked
 * against the block's checksums. The executor's read services pass {@link #NONE}; tests pass one
 * that flips bytes as a fault on the transfer would, and see the read path catch it.
 */
@FunctionalInterface
interface ArrivalTap {
  /** Taps nothing. */
  ArrivalTap NONE = bytes -> {};

  /**
   * Called with a data read's bytes (position to limit) on the thread that completed the read; may
   * change them in place.
   */
  void arrived(ByteBuffer bytes);
}
