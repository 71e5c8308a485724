package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Slot stage: gives each map output of a fetch request its directory slot, from the executor's slot
 * cache ({@link MapOutputCache}) or by one batch of slot reads. A function of the request's map
 * outputs; it ends no block itself, it reports them ({@link Result}).
 *
 * <p>Where the directory keeps index entries inline ({@link
 * io.memwire.shuffle.directory.DirectoryPointer#entries()}), each slot read covers the slot and its
 * entries, so the batch is the request's only metadata round trip: the entries are handed on with
 * the slot and kept in the executor's index cache (within its budget). Entries that are not a valid
 * index fail their blocks, as an invalid index file does.
 *
 * <p>A slot that names another map id (or does not decode) is dropped from the cache and reported
 * {@code stale}: the caller re-reads those once, all in one more batch ({@link #reread}); if one is
 * still wrong its blocks are reported as failures (counted in {@code staleSlots}), so Spark reruns
 * the map stage instead of reading the wrong output. Unreadable slots are reported for Spark's
 * client (cause {@code read}); a batch that cannot be posted reports every block of the request.
 * Each slot buffer is released once decoded.
 *
 * <p>Threads: the cache and the post run on the caller's thread; the result completes on the thread
 * completing the slot batch (a provider I/O or completion thread, or the thread failing the
 * connection). A decoding bug completes it exceptionally.
 */
final class SlotLookup {
  private final MapOutputCache cache;
  private final int shuffleId;
  private final ReadMetrics metrics;
  private final Peer peer;
  private final PeerLink link;
  private final List<MapBlocks> request;

  /**
   * @param request every map output of the fetch request (all go to Spark if a batch cannot be
   *     posted)
   */
  SlotLookup(
      MapOutputCache cache,
      int shuffleId,
      ReadMetrics metrics,
      Peer peer,
      PeerLink link,
      List<MapBlocks> request) {
    this.cache = cache;
    this.shuffleId = shuffleId;
    this.metrics = metrics;
    this.peer = peer;
    this.link = link;
    this.request = request;
  }

  /**
   * What a lookup found: map outputs with their slot, blocks to end, and map outputs whose slot was
   * stale (empty after a re-read).
   */
  record Result(Found<SlottedBlocks> slotted, List<MapBlocks> stale) {}

  /** Takes cached slots, then reads the missing ones in one batch. */
  CompletableFuture<Result> lookup(List<MapBlocks> maps) {
    List<SlottedBlocks> cached = new ArrayList<>();
    List<MapBlocks> missing = new ArrayList<>();
    for (MapBlocks m : maps) {
      MapOutput o = cache.cached(shuffleId, m.route(), m.mapId());
      if (o != null) {
        cached.add(new SlottedBlocks(m, o.slot()));
      } else {
        missing.add(m);
      }
    }
    if (missing.isEmpty()) {
      return CompletableFuture.completedFuture(
          new Result(new Found<>(cached, List.of()), List.of()));
    }
    return read(missing, false)
        .thenApply(
            r -> {
              cached.addAll(r.slotted().found());
              return new Result(new Found<>(cached, r.slotted().misses()), r.stale());
            });
  }

  /** Reads the slots found stale once more; those still stale are reported as failures. */
  CompletableFuture<Result> reread(List<MapBlocks> stale) {
    return read(stale, true);
  }

  private CompletableFuture<Result> read(List<MapBlocks> maps, boolean reread) {
    List<ReadRequest> reqs = new ArrayList<>(maps.size());
    for (MapBlocks m : maps) {
      Route k = m.route();
      reqs.add(
          ReadRequest.of(
              k.pointer().region(),
              k.pointer().slotOffset(k.mapIndex()),
              k.pointer().slotReadLength()));
    }
    ReadBatch batch;
    try {
      batch = link.read(reqs);
    } catch (RuntimeException e) {
      List<Wanted> all = new ArrayList<>();
      request.forEach(m -> all.addAll(m.blocks()));
      return CompletableFuture.completedFuture(
          new Result(
              Found.none(new Miss.Fallback(all, FallbackCause.READ, "slot read failed: " + e, e)),
              List.of()));
    }
    metrics.metadataBatch();
    metrics.slotsRead(maps.size());
    return batch.all().handle((ok, err) -> decode(maps, batch, reread));
  }

  private Result decode(List<MapBlocks> maps, ReadBatch batch, boolean reread) {
    List<SlottedBlocks> slotted = new ArrayList<>();
    List<Miss> misses = new ArrayList<>();
    List<MapBlocks> stale = new ArrayList<>();
    List<Wanted> unreadable = new ArrayList<>();
    String cause = null;
    Throwable error = null;
    for (int i = 0; i < maps.size(); i++) {
      MapBlocks m = maps.get(i);
      TransferBuffer buf;
      try {
        buf = batch.result(i).join();
      } catch (CompletionException e) {
        unreadable.addAll(m.blocks());
        error = e.getCause();
        cause = "directory read failed: " + error.getMessage();
        continue;
      }
      DirectorySlot slot;
      try {
        slot =
            DirectorySlot.read(
                buf.nioBuffer(), m.route().pointer().entries(), m.route().pointer().checksums());
      } finally {
        buf.release();
      }
      if (slot != null && slot.mapId() == m.mapId() && slot.mapIndex() == m.route().mapIndex()) {
        DirectorySlot header = slot.withoutEntries();
        cache.cacheSlot(shuffleId, m.route(), header);
        if (slot.entries() == null) {
          slotted.add(new SlottedBlocks(m, slot));
        } else if (IndexFile.valid(slot.entries(), slot.dataLength())) {
          metrics.wholeIndexRead();
          cache.cacheIndex(shuffleId, m.route(), header, slot.entries());
          slotted.add(new SlottedBlocks(m, slot));
        } else {
          misses.add(new Miss.Failure(m.blocks(), invalidEntries(slot)));
        }
      } else {
        cache.drop(shuffleId, m.route());
        stale.add(m);
      }
    }
    if (!unreadable.isEmpty()) {
      misses.add(new Miss.Fallback(unreadable, FallbackCause.READ, cause, error));
    }
    if (!reread) {
      return new Result(new Found<>(slotted, misses), stale);
    }
    for (MapBlocks m : stale) {
      metrics.staleSlot();
      misses.add(
          new Miss.Failure(
              m.blocks(),
              new IOException(
                  "shuffle directory slot for map index "
                      + m.route().mapIndex()
                      + " on executor "
                      + peer.execId()
                      + " does not hold map output "
                      + m.mapId()
                      + " (stale or invalid after a re-read)")));
    }
    return new Result(new Found<>(slotted, misses), List.of());
  }

  private IOException invalidEntries(DirectorySlot slot) {
    return new IndexFile.InvalidIndexException(
        "inline index of map output "
            + slot.mapId()
            + " on "
            + peer
            + " is invalid ("
            + slot.entries().length
            + " entries for a data file of "
            + slot.dataLength()
            + " bytes)");
  }
}
