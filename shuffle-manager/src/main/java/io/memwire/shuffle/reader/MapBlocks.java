package io.memwire.shuffle.reader;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The blocks of one fetch request that come from one map output (one directory slot). */
record MapBlocks(Route route, List<Wanted> blocks) {
  MapBlocks {
    blocks = List.copyOf(blocks);
  }

  /** The map output these blocks belong to (they all name the same one). */
  long mapId() {
    return blocks.get(0).mapId();
  }

  /** {@code blocks} grouped by map output, each group where its first block was. */
  static List<MapBlocks> byRoute(List<Wanted> blocks) {
    Map<Route, List<Wanted>> byRoute = new LinkedHashMap<>();
    blocks.forEach(w -> byRoute.computeIfAbsent(w.route(), k -> new ArrayList<>()).add(w));
    List<MapBlocks> maps = new ArrayList<>(byRoute.size());
    byRoute.forEach((route, ws) -> maps.add(new MapBlocks(route, ws)));
    return maps;
  }

  /** Every block of {@code maps}, in order. */
  static List<Wanted> blocksOf(List<MapBlocks> maps) {
    List<Wanted> all = new ArrayList<>();
    maps.forEach(m -> all.addAll(m.blocks()));
    return all;
  }
}
