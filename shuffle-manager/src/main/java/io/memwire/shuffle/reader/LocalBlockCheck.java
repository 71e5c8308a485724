package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.zip.Checksum;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockId;
import scala.Option;

/**
 * Checks the blocks Spark reads itself through this executor's resolver (its own outputs read
 * locally, blocks its own transfer serves) against the checksum file Spark wrote beside them, as
 * one-sided reads are checked ({@link DataFetch}): a block whose stored bytes do not match, twice,
 * is refused with an {@link UncheckedIOException} saying {@code checksum mismatch} and {@code
 * cause: disk}, which Spark reports as a fetch failure (its map reruns). Outputs without a checksum
 * file pass unchecked. Thread-safe; runs on the thread asking for the block.
 */
public final class LocalBlockCheck {
  private final IndexShuffleBlockResolver files;
  private final ChecksumAlgorithm algorithm;
  private final Runnable onMismatch;

  /**
   * @param files the resolver that finds the outputs' index and checksum files
   * @param algorithm Spark's {@code spark.shuffle.checksum.algorithm}, or null when checksums are
   *     off (then nothing is checked)
   * @param onMismatch counts a block refused
   */
  public LocalBlockCheck(
      IndexShuffleBlockResolver files, ChecksumAlgorithm algorithm, Runnable onMismatch) {
    this.files = files;
    this.algorithm = algorithm;
    this.onMismatch = onMismatch;
  }

  /** Returns {@code block} when it matches its stored checksums (or has none); else throws. */
  public ManagedBuffer check(BlockId id, ManagedBuffer block) {
    if (algorithm == null) {
      return block;
    }
    int shuffleId;
    long mapId;
    int start;
    int end;
    if (id instanceof ShuffleBlockId s) {
      shuffleId = s.shuffleId();
      mapId = s.mapId();
      start = s.reduceId();
      end = start + 1;
    } else if (id instanceof ShuffleBlockBatchId s) {
      shuffleId = s.shuffleId();
      mapId = s.mapId();
      start = s.startReduceId();
      end = s.endReduceId();
    } else {
      return block;
    }
    File sums = files.getChecksumFile(shuffleId, mapId, algorithm.name(), Option.empty());
    if (end <= start || !sums.isFile()) {
      return block;
    }
    try {
      long[] expected = longs(sums, start, end - start);
      long[] entries =
          longs(files.getIndexFile(shuffleId, mapId, Option.empty()), start, end - start + 1);
      if (expected == null
          || entries == null
          || entries[end - start] - entries[0] != block.size()) {
        return block; // not the files this block came from: leave it to Spark
      }
      int bad = mismatch(block, expected, entries);
      if (bad >= 0 && mismatch(block, expected, entries) >= 0) {
        onMismatch.run();
        throw new UncheckedIOException(
            new IOException(
                "checksum mismatch in block "
                    + id
                    + " (reduce partition "
                    + (start + bad)
                    + " of map output "
                    + mapId
                    + ", read by Spark from this executor's files): expected "
                    + algorithm
                    + " "
                    + expected[bad]
                    + " on two reads; cause: disk (the stored bytes are wrong: the data file or"
                    + " its checksum file changed after the map wrote them)"));
      }
      return block;
    } catch (IOException e) {
      return block; // the files could not be read here: Spark's own read reports that
    }
  }

  /** The first partition of the block that does not match, or -1. */
  private int mismatch(ManagedBuffer block, long[] expected, long[] entries) throws IOException {
    byte[] buf = new byte[64 * 1024];
    try (InputStream in = block.createInputStream()) {
      for (int p = 0; p < expected.length; p++) {
        Checksum sum = algorithm.newChecksum();
        long left = entries[p + 1] - entries[p];
        while (left > 0) {
          int n = in.read(buf, 0, (int) Math.min(buf.length, left));
          if (n < 0) {
            return p;
          }
          sum.update(buf, 0, n);
          left -= n;
        }
        if (sum.getValue() != expected[p]) {
          return p;
        }
      }
    }
    return -1;
  }

  /** {@code n} big-endian longs from index {@code from} of a file, or null when it is shorter. */
  private static long[] longs(File f, int from, int n) throws IOException {
    try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
      ByteBuffer b = ByteBuffer.allocate(n * 8);
      long at = (long) from * 8;
      while (b.hasRemaining()) {
        if (ch.read(b, at + b.position()) < 0) {
          return null;
        }
      }
      long[] out = new long[n];
      b.flip().asLongBuffer().get(out);
      return out;
    }
  }
}
