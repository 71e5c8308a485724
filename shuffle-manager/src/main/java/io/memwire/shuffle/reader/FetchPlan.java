package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import java.util.List;

/**
 * What becomes of one fetch request's blocks (one peer), decided once by {@link FetchPlanner}:
 * which go to Spark's own path from the start ({@code toSpark}, null when none), which are read
 * one-sided, grouped by map output in the order Spark asked for them ({@code oneSided}), where
 * their bytes land ({@code mode}), and whether blocks whose one-sided read or connect fails get a
 * second chance from a re-resolved pointer ({@code secondChance}, service mode). Immutable.
 */
record FetchPlan(
    Peer peer, Mode mode, ToSpark toSpark, List<MapBlocks> oneSided, boolean secondChance) {
  FetchPlan {
    oneSided = List.copyOf(oneSided);
  }

  /**
   * Where one-sided blocks land: in memory, or in Spark's temp files (Spark wants them on disk).
   */
  enum Mode {
    MEMORY,
    DISK
  }

  /** Blocks read through Spark's own path, why, and whether the peer's first one is logged. */
  record ToSpark(List<String> ids, FallbackCause cause, String reason, boolean log) {
    ToSpark {
      ids = List.copyOf(ids);
    }
  }

  /** Every block read one-sided, in request order. */
  List<Wanted> oneSidedBlocks() {
    return MapBlocks.blocksOf(oneSided);
  }
}
