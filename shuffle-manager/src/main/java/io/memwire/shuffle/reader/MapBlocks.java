package io.memwire.shuffle.reader;

import java.util.List;

/** The blocks of one fetch request that come from one map output (one directory slot). */
record MapBlocks(Route route, List<Wanted> blocks) {
  MapBlocks {
    blocks = List.copyOf(blocks);
  }

  /** The map output these blocks belong to (they all name the same one). */
  long mapId() {
    return blocks.get(0).mapId();
  }
}
