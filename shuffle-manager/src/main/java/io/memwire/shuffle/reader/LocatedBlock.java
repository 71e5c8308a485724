package io.memwire.shuffle.reader;

import io.memwire.transfer.RemoteRegion;
import java.util.ArrayList;
import java.util.List;

/**
 * A block whose bytes were found: {@code length} bytes at {@code offset} of its map output's data
 * file, the remote region {@code data}, located through the slot at {@code source} (dropped from
 * the cache when the data read fails), with what its bytes must match ({@code checksum}; null when
 * its writer stored no checksums: it is read unverified). What the index stage hands a {@link
 * BlockSource}.
 */
record LocatedBlock(
    Wanted block,
    Route source,
    RemoteRegion data,
    long offset,
    long length,
    BlockChecksum checksum) {

  /** The blocks of {@code located}, in order. */
  static List<Wanted> blocksOf(List<LocatedBlock> located) {
    List<Wanted> out = new ArrayList<>(located.size());
    located.forEach(b -> out.add(b.block()));
    return out;
  }
}
