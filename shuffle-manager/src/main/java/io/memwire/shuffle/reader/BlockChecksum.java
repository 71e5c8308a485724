package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.OutputChecksums;
import java.nio.ByteBuffer;
import java.util.zip.Checksum;

/**
 * What a located block's bytes must match: Spark's checksum of each of its reduce partitions {@code
 * [first, first + expected.length)}, as its writer stored them, with the partitions' ends relative
 * to the block's start. Immutable; {@link #verifier()} checks one copy of the bytes.
 */
final class BlockChecksum {
  private final ChecksumAlgorithm algorithm;
  private final int first;
  private final long[] expected;
  private final long[] ends;

  private BlockChecksum(ChecksumAlgorithm algorithm, int first, long[] expected, long[] ends) {
    this.algorithm = algorithm;
    this.first = first;
    this.expected = expected;
    this.ends = ends;
  }

  /**
   * The checksum of the block of partitions {@code [start, end)} whose index entries are {@code
   * entries} (at {@code from}, {@code end - start + 1} of them), or null without checksums.
   */
  static BlockChecksum of(OutputChecksums sums, int start, int end, long[] entries, int from) {
    if (sums == null || end > sums.values().length) {
      return null;
    }
    return of(sums.algorithm(), sums.values(), 0, start, end, entries, from);
  }

  /**
   * As {@link #of(OutputChecksums, int, int, long[], int)}, from checksums of {@code algorithm}
   * where partition p's value is {@code values[p - valuesFrom]} (the whole output's, or those read
   * for this block alone).
   */
  static BlockChecksum of(
      ChecksumAlgorithm algorithm,
      long[] values,
      int valuesFrom,
      int start,
      int end,
      long[] entries,
      int from) {
    if (algorithm == null || start < valuesFrom || end - valuesFrom > values.length) {
      return null;
    }
    long[] exp = new long[end - start];
    long[] rel = new long[end - start];
    long base = entries[from];
    for (int i = 0; i < exp.length; i++) {
      exp[i] = values[start - valuesFrom + i];
      rel[i] = entries[from + i + 1] - base;
    }
    return new BlockChecksum(algorithm, start, exp, rel);
  }

  ChecksumAlgorithm algorithm() {
    return algorithm;
  }

  /** A new check of one copy of the block's bytes, fed in order. */
  Verifier verifier() {
    return new Verifier();
  }

  /** A partition whose bytes did not match: its reduce id, the stored and the computed value. */
  record Mismatch(int reduceId, long expected, long found) {}

  /** Checks one copy of the block's bytes, given in order in one or more pieces. */
  final class Verifier {
    private final Checksum sum = algorithm.newChecksum();
    private int partition;
    private long at;
    private Mismatch mismatch;

    /** Feeds the next bytes of the block (the buffer's position is left unchanged). */
    void update(ByteBuffer piece) {
      ByteBuffer b = piece.duplicate();
      while (b.hasRemaining() && partition < ends.length) {
        long left = ends[partition] - at;
        int n = (int) Math.min(left, b.remaining());
        ByteBuffer part = b.duplicate();
        part.limit(part.position() + n);
        sum.update(part); // the JDK's intrinsic over the buffer in hand, no copy
        b.position(b.position() + n);
        at += n;
        if (at == ends[partition]) {
          endPartition();
        }
      }
    }

    private void endPartition() {
      long found = sum.getValue();
      if (found != expected[partition] && mismatch == null) {
        mismatch = new Mismatch(first + partition, expected[partition], found);
      }
      sum.reset();
      partition++;
    }

    /** Ends the check: the first partition that did not match, or null when all did. */
    Mismatch finish() {
      while (partition < ends.length) {
        endPartition(); // empty partitions at the end, or bytes missing
      }
      return mismatch;
    }
  }
}
