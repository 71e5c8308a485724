package io.memwire.shuffle.directory;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.memory.MemoryAllocator;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a {@link ShuffleDirectory} reads of a map output's index file at publication: the entries it
 * keeps inline after a slot header, or, for a shuffle of headers only, a metadata region (the index
 * entries, then Spark's checksums, in registered memory of the directory's allocator) that an MWS4
 * slot names. Any thread; the one mutable field is the said-once flag.
 */
final class OutputMetadata {
  // The directory's logger name, so these lines read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleDirectory.class);

  private final Registrar node;
  private final MemoryAllocator allocator;
  private final AtomicBoolean refusalSaid = new AtomicBoolean();

  OutputMetadata(Registrar node, MemoryAllocator allocator) {
    this.node = node;
    this.allocator = allocator;
  }

  /**
   * The index file's entries when it is short enough to keep inline ({@value
   * DirectorySlot#MAX_INLINE_ENTRIES} at most) and readable; null otherwise.
   */
  static long[] inlineEntries(MemoryRegion index) {
    long bytes = index.length();
    if (!index.isFileBacked()
        || bytes % 8 != 0
        || bytes < 16
        || bytes > DirectorySlot.MAX_INLINE_ENTRIES * 8L) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate((int) bytes);
    try {
      readIndex(index, b);
    } catch (IOException e) {
      LOG.debug("cannot read index file {}: {}", index.file(), e.toString());
      return null;
    }
    long[] out = new long[(int) (bytes / 8)];
    b.flip().asLongBuffer().get(out);
    return out;
  }

  /**
   * A metadata region for an output of a shuffle of headers only: its index file's entries, then
   * {@code sums}, in registered memory of the directory's allocator. Null (the output is read
   * unverified, said once per directory) when the index cannot be read or no limit has room.
   */
  BufferUnit build(int shuffleId, long mapId, MemoryRegion index, OutputChecksums sums) {
    if (!index.isFileBacked()) {
      return null;
    }
    int entries = sums.values().length + 1;
    int size = DirectorySlot.metadataLength(entries);
    BufferUnit unit;
    try {
      unit =
          node.allocateRegistered(
              allocator, size, "metadata of map output " + mapId + " of shuffle " + shuffleId);
    } catch (RuntimeException e) {
      refused(shuffleId, mapId, e.getMessage());
      return null;
    }
    ByteBuffer b = unit.buffer().order(ByteOrder.BIG_ENDIAN);
    try {
      readIndex(index, b.duplicate().position(0).limit(entries * 8));
    } catch (IOException e) {
      unit.release();
      refused(shuffleId, mapId, e.toString());
      return null;
    }
    long[] v = sums.values();
    for (int i = 0; i < v.length; i++) {
      b.putLong((entries + i) * 8, v[i]);
    }
    return unit;
  }

  /** Fills {@code into} (position to limit) from the start of {@code index}'s file. */
  private static void readIndex(MemoryRegion index, ByteBuffer into) throws IOException {
    try (FileChannel ch = FileChannel.open(index.file(), StandardOpenOption.READ)) {
      long at = 0;
      while (into.hasRemaining()) {
        int n = ch.read(into, at);
        if (n < 0) {
          throw new IOException("index file " + index.file() + " shorter than expected");
        }
        at += n;
      }
    }
  }

  private void refused(int shuffleId, long mapId, String why) {
    if (refusalSaid.compareAndSet(false, true)) {
      LOG.info(
          "map output {} of shuffle {} gets no metadata region ({}): its blocks are read"
              + " one-sided unverified; later such outputs are logged at debug",
          mapId,
          shuffleId,
          why);
    } else {
      LOG.debug("map output {} of shuffle {}: no metadata region: {}", mapId, shuffleId, why);
    }
  }
}
