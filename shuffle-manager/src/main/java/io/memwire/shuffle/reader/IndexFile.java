package io.memwire.shuffle.reader;

import java.io.IOException;
import java.nio.ByteBuffer;

/** A map output's index file as read from a peer: Spark's big-endian offsets, checked. */
final class IndexFile {
  private IndexFile() {}

  /**
   * Decodes a whole index file: at least two big-endian offsets, starting at 0, never decreasing,
   * the last not beyond the data file.
   *
   * @return the offsets, or null when the bytes are not such an index
   */
  static long[] decode(ByteBuffer b, long dataLength) {
    int n = b.remaining() / 8;
    if (b.remaining() % 8 != 0 || n < 2) {
      return null;
    }
    long[] offsets = new long[n];
    int base = b.position();
    long previous = 0;
    for (int i = 0; i < n; i++) {
      long v = b.getLong(base + i * 8);
      if (v < previous || (i == 0 && v != 0)) {
        return null;
      }
      offsets[i] = v;
      previous = v;
    }
    return offsets[n - 1] <= dataLength ? offsets : null;
  }

  /**
   * Whether offsets are an index: at least two, starting at 0, never decreasing, the last not
   * beyond the data file.
   */
  static boolean valid(long[] offsets, long dataLength) {
    if (offsets.length < 2 || offsets[0] != 0) {
      return false;
    }
    for (int i = 1; i < offsets.length; i++) {
      if (offsets[i] < offsets[i - 1]) {
        return false;
      }
    }
    return offsets[offsets.length - 1] <= dataLength;
  }

  /** A whole index whose bytes are not an index file: its blocks fail, they are not retried. */
  static final class InvalidIndexException extends IOException {
    InvalidIndexException(String message) {
      super(message);
    }
  }
}
