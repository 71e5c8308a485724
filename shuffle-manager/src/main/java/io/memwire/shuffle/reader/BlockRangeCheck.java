package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import java.io.IOException;
import java.util.List;

/**
 * Turns a block's index entries into its data range: a {@link LocatedBlock} (with the block's
 * checksums, when its map output has them), or a miss when the entries are invalid or outside the
 * map output's index, or a block too large for one read (only when Spark does not want it on disk).
 * Checks only what it is given; it reads nothing and holds no state but that setting.
 */
final class BlockRangeCheck {
  private final boolean toDisk;

  /**
   * @param toDisk whether Spark wants the blocks on disk (then a block may exceed one read)
   */
  BlockRangeCheck(boolean toDisk) {
    this.toDisk = toDisk;
  }

  /**
   * Locates a block from its map output's whole index and the output's checksums ({@code sums},
   * null for none).
   */
  void locate(
      Wanted w,
      SlottedBlocks m,
      long[] offsets,
      OutputChecksums sums,
      List<LocatedBlock> data,
      List<Miss> misses,
      List<Wanted> tooLarge) {
    if (w.end() >= offsets.length) {
      misses.add(new Miss.Failure(List.of(w), outsideIndex(w, m.slot())));
    } else {
      locate(
          w,
          m,
          offsets,
          w.start(),
          sums == null ? null : sums.algorithm(),
          sums == null ? null : sums.values(),
          0,
          data,
          misses,
          tooLarge);
    }
  }

  /**
   * Checks a block's range against its data file: located, invalid, or too large. Its index entries
   * are {@code entries} from {@code from} on ({@code end - start + 1} of them); partition p's
   * checksum is {@code values[p - valuesFrom]} ({@code algorithm} null: none, read unverified).
   */
  void locate(
      Wanted w,
      SlottedBlocks m,
      long[] entries,
      int from,
      ChecksumAlgorithm algorithm,
      long[] values,
      int valuesFrom,
      List<LocatedBlock> data,
      List<Miss> misses,
      List<Wanted> tooLarge) {
    DirectorySlot slot = m.slot();
    long first = entries[from];
    long last = entries[from + w.end() - w.start()];
    for (int k = from + 1; k <= from + w.end() - w.start(); k++) {
      if (entries[k] < entries[k - 1]) {
        last = -1; // entries within a batch block that decrease: invalid
      }
    }
    if (first < 0 || last < first || last > slot.dataLength()) {
      misses.add(
          new Miss.Failure(
              List.of(w),
              new IOException(
                  "index entries of block "
                      + w.id()
                      + " are invalid: ["
                      + first
                      + ", "
                      + last
                      + ") in a data file of "
                      + slot.dataLength()
                      + " bytes")));
    } else if (!toDisk && last - first > Integer.MAX_VALUE) {
      tooLarge.add(w);
    } else {
      data.add(
          new LocatedBlock(
              w,
              m.map().route(),
              slot.data(),
              first,
              last - first,
              BlockChecksum.of(algorithm, values, valuesFrom, w.start(), w.end(), entries, from)));
    }
  }

  static IOException outsideIndex(Wanted w, DirectorySlot slot) {
    return new IOException(
        "block "
            + w.id()
            + " is outside map output "
            + w.mapId()
            + "'s index of "
            + slot.indexLength()
            + " bytes");
  }
}
