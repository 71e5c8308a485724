package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.Connection;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One attempt at reading a fetch request's one-sided blocks (one peer, many blocks), for its {@link
 * FetchRun}: the one place the stages are composed. Each stage is a function from blocks to what it
 * found (a future of immutable values): connect, {@link SlotLookup} (map output -> directory slot;
 * stale slots re-read once), {@link IndexLookup} (slot -> {@link LocatedBlock}: region, offset,
 * length), then a {@link BlockSource}: {@link DataFetch} (blocks in memory) or {@link ToDiskFetch}
 * (blocks Spark wants on disk). What a stage could not locate ({@link Miss}) is ended by {@link
 * BlockEnds#settle} before the next stage runs.
 *
 * <p>Ordering: slots before indexes before data; blocks located from the cache get their data
 * posted after the other blocks' index batch; blocks handed to Spark's client leave before the data
 * of the rest is posted. Threads: {@link #start()} runs on the task thread (when Spark issues the
 * request, or when its held step ends); every later step runs on the thread that completes the
 * previous read (a provider I/O or completion thread, the thread failing the connection, or the
 * posting thread when the read had ended already), except to-disk file writes (on {@code
 * memwire-shuffle-fallback-N}). A bug in a stage sends the blocks it held off the one-sided path
 * (cause {@code internal}: to Spark's client).
 */
final class FetchRequest {
  private static final Logger LOG = LoggerFactory.getLogger(FetchRequest.class);

  private final ReadServices services;
  private final int shuffleId;
  private final Peer peer;
  private final List<MapBlocks> maps;
  private final BlockEnds ends;

  /** Non-null when Spark wants this request's blocks on disk. */
  private final DownloadFileManager toDisk;

  /**
   * @param maps the request's blocks by map output, in the order Spark asked for them
   */
  FetchRequest(
      ReadServices services,
      int shuffleId,
      Peer peer,
      List<MapBlocks> maps,
      BlockEnds ends,
      DownloadFileManager toDisk) {
    this.services = services;
    this.shuffleId = shuffleId;
    this.peer = peer;
    this.maps = List.copyOf(maps);
    this.ends = ends;
    this.toDisk = toDisk;
  }

  /** Connects to the peer and starts the stages (task thread). */
  void start() {
    RemoteRegion any = maps.get(0).route().pointer().region();
    Connection connection;
    try {
      connection = services.node.connection(any.node());
    } catch (TransferException | RuntimeException e) {
      ends.fallback(
          all(), FallbackCause.CONNECT, "cannot connect to " + any.node() + ": " + e.getMessage());
      return;
    }
    PeerLink link = new PeerLink(connection, peer.execId(), services.metrics);
    MapOutputCache cache = services.cache;
    ReadMetrics metrics = services.metrics;
    SlotLookup slots = new SlotLookup(cache, shuffleId, metrics, peer, link, maps);
    IndexLookup indexes = new IndexLookup(cache, shuffleId, metrics, peer, link, toDisk != null);
    BlockSource data =
        toDisk != null
            ? new ToDiskFetch(
                cache,
                shuffleId,
                metrics,
                services.settings,
                services.tap,
                services.threads,
                services::transportConf,
                link,
                ends,
                toDisk)
            : new DataFetch(cache, shuffleId, metrics, services.settings, services.tap, link, ends);
    var unused =
        findSlots(slots)
            .thenAccept(slotted -> locateAndRead(indexes, slotted, data))
            .exceptionally(
                e -> {
                  LOG.warn("reading directory slots from {} failed", peer, e);
                  ends.fallback(
                      all(), FallbackCause.INTERNAL, "internal error: " + Failures.unwrap(e));
                  return null;
                });
  }

  /**
   * The slot stage, its misses ended as each step completes: cached or read slots, then one re-read
   * of the stale ones. A step that re-resolves a dead directory pointer would slot in here, after
   * the first lookup: it takes the misses whose error is a dead region key and looks them up again.
   */
  private CompletableFuture<List<SlottedBlocks>> findSlots(SlotLookup slots) {
    return slots
        .lookup(maps)
        .thenCompose(
            first -> {
              ends.settle(first.slotted().misses());
              if (first.stale().isEmpty()) {
                return CompletableFuture.completedFuture(first.slotted().found());
              }
              return slots
                  .reread(first.stale())
                  .thenApply(
                      second -> {
                        ends.settle(second.slotted().misses());
                        List<SlottedBlocks> all = new ArrayList<>(first.slotted().found());
                        all.addAll(second.slotted().found());
                        return all;
                      });
            });
  }

  /** The index stage, then each group's misses ended and its located blocks read. */
  private void locateAndRead(IndexLookup indexes, List<SlottedBlocks> slotted, BlockSource data) {
    for (IndexLookup.Located group : indexes.locate(inRequestOrder(slotted))) {
      var unused =
          group
              .result()
              .whenComplete(
                  (found, err) -> {
                    try {
                      if (err != null) {
                        throw err instanceof RuntimeException re
                            ? re
                            : new CompletionException(err);
                      }
                      ends.settle(found.misses());
                      data.read(found.found());
                    } catch (RuntimeException e) {
                      LOG.warn("{} of {} failed", group.step(), peer, e);
                      ends.fallback(
                          group.blocks(),
                          FallbackCause.INTERNAL,
                          "internal error: " + Failures.unwrap(e));
                    }
                  });
    }
  }

  /** The slotted map outputs in the order of the request, each with its blocks not ended yet. */
  private List<SlottedBlocks> inRequestOrder(List<SlottedBlocks> slotted) {
    Map<Route, SlottedBlocks> byKey = new LinkedHashMap<>();
    slotted.forEach(s -> byKey.put(s.map().route(), s));
    List<SlottedBlocks> out = new ArrayList<>();
    for (MapBlocks m : maps) {
      SlottedBlocks s = byKey.get(m.route());
      if (s == null) {
        continue;
      }
      List<Wanted> pending = ends.pending(m.blocks());
      if (!pending.isEmpty()) {
        out.add(new SlottedBlocks(new MapBlocks(m.route(), pending), s.slot()));
      }
    }
    return out;
  }

  private List<Wanted> all() {
    return MapBlocks.blocksOf(maps);
  }
}
