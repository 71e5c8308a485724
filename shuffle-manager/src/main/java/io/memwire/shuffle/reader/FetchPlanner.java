package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.ProviderKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockId;

/**
 * Decides, once per fetch request of one reduce task, which blocks are read from where and how
 * ({@link FetchPlan}): one-sided into memory, one-sided into Spark's temp files, or through Spark's
 * own path (everything when reads are delegated; a block whose map output published no directory
 * pointer; a peer serving over another provider). Its fields are the task's immutable facts: the
 * shuffle, each map output's route, this executor's provider and, in service mode, the pointer
 * re-resolution (a route whose pointer was re-resolved after a service restart is read from where
 * it went). Thread-safe (immutable; the routes map is not changed after construction).
 */
final class FetchPlanner {
  private final int shuffleId;
  private final Map<Long, Route> routes;

  /** This executor's provider; null when every block goes to Spark ({@link #delegateAll}). */
  private final ProviderKind provider;

  private final FallbackCause delegateAll;
  private final PointerResolution resolution;

  /**
   * @param routes by map id, for every map output whose location carried a directory pointer
   * @param delegateAll non-null when every block goes to Spark's client, counted under it
   * @param resolution service mode's pointer re-resolution, or null
   */
  FetchPlanner(
      int shuffleId,
      Map<Long, Route> routes,
      ProviderKind provider,
      FallbackCause delegateAll,
      PointerResolution resolution) {
    this.shuffleId = shuffleId;
    this.routes = routes;
    this.provider = provider;
    this.delegateAll = delegateAll;
    this.resolution = resolution;
  }

  /**
   * The plan of one fetch request: {@code toDisk} when Spark wants its blocks on disk (above {@code
   * spark.network.maxRemoteBlockSizeFetchToMem}).
   */
  FetchPlan plan(Peer peer, String[] blockIds, boolean toDisk) {
    FetchPlan.Mode mode = toDisk ? FetchPlan.Mode.DISK : FetchPlan.Mode.MEMORY;
    if (delegateAll != null) {
      // Decided for the whole application at start (and logged then): no per-peer log line.
      return new FetchPlan(
          peer,
          mode,
          new FetchPlan.ToSpark(List.of(blockIds), delegateAll, "reads delegated to Spark", false),
          List.of(),
          false);
    }
    List<String> viaSpark = new ArrayList<>();
    String reason = null;
    FallbackCause cause = null;
    List<Wanted> oneSided = new ArrayList<>();
    for (String id : blockIds) {
      Wanted w = parse(id);
      if (w == null) {
        viaSpark.add(id);
        reason = "no memwire directory published for its map outputs";
        cause = FallbackCause.NO_DIRECTORY;
      } else if (w.route().provider() != provider) {
        viaSpark.add(id);
        reason =
            "peer serves over " + w.route().provider() + ", this executor reads over " + provider;
        cause = FallbackCause.PROVIDER_MISMATCH;
      } else {
        oneSided.add(w);
      }
    }
    FetchPlan.ToSpark spark =
        viaSpark.isEmpty() ? null : new FetchPlan.ToSpark(viaSpark, cause, reason, true);
    return new FetchPlan(peer, mode, spark, MapBlocks.byRoute(oneSided), resolution != null);
  }

  /** The block {@code id} as read one-sided, or null when it goes through Spark's path. */
  Wanted oneSided(String id) {
    if (delegateAll != null) {
      return null;
    }
    Wanted w = parse(id);
    return w == null || w.route().provider() != provider ? null : w;
  }

  /** The plan of one block read one-sided into memory (a block {@link #oneSided} returned). */
  FetchPlan single(Peer peer, Wanted w) {
    return new FetchPlan(
        peer, FetchPlan.Mode.MEMORY, null, MapBlocks.byRoute(List.of(w)), resolution != null);
  }

  private Wanted parse(String id) {
    BlockId b;
    try {
      b = BlockId.apply(id);
    } catch (RuntimeException e) {
      return null;
    }
    long mapId;
    int start;
    int end;
    boolean batch = false;
    if (b instanceof ShuffleBlockId s) {
      if (s.shuffleId() != shuffleId) {
        return null;
      }
      mapId = s.mapId();
      start = s.reduceId();
      end = start + 1;
    } else if (b instanceof ShuffleBlockBatchId s) {
      if (s.shuffleId() != shuffleId) {
        return null;
      }
      mapId = s.mapId();
      start = s.startReduceId();
      end = s.endReduceId();
      batch = true;
    } else {
      return null;
    }
    Route r = routes.get(mapId);
    if (r != null && resolution != null) {
      // A pointer re-resolved after a service restart: read from where it went.
      r = r.movedTo(resolution.current(shuffleId, r.pointer()));
    }
    if (r == null || r.pointer().slotOffset(r.mapIndex()) < 0 || end <= start) {
      return null;
    }
    return new Wanted(id, mapId, r, start, end, batch);
  }
}
