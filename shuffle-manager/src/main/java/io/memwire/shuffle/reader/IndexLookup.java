package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import io.memwire.shuffle.reader.IndexFile.InvalidIndexException;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Index stage: finds each block's data range ({@link LocatedBlock}) from its map output's index:
 * the entries read inline with its slot, the index cached whole in {@link MapOutputCache}, or read
 * in one batch (whole, when the cache has room, else the block's entries), each block's entries
 * checked against its data file by {@link BlockRangeCheck}. A function of the slotted map outputs;
 * it ends no block itself, it reports them ({@link Miss}): an invalid index or entry fails its
 * blocks, a failed read and a block too large for one read go to Spark's client.
 *
 * <p>The blocks come back in groups ({@link Located}), each completing on its own: those of another
 * task's whole-index load of this executor, then those located at once (cached index), then those
 * of this request's index batch (before them when the batch has ended already), which is posted
 * before {@link #locate} returns, so the small index reads are not queued behind data. A
 * whole-index load is claimed once per executor; other tasks wait on it. Every claimed load ends
 * exactly once (loaded or failed) on every path, so none of its waiters hangs, and a failure
 * reaches all of them. Each index buffer is released once decoded.
 *
 * <p>Threads: {@link #locate} runs on the thread that ended the slot stage (task or I/O thread); a
 * batch group completes on the thread completing the index batch, a shared-load group on the thread
 * that ends the other task's load (or at once, when it had ended already). A decoding bug completes
 * the group exceptionally.
 */
final class IndexLookup {
  private final MapOutputCache cache;
  private final int shuffleId;
  private final ReadMetrics metrics;
  private final Peer peer;
  private final PeerLink link;
  private final BlockRangeCheck ranges;

  /**
   * @param toDisk whether Spark wants the blocks on disk (then a block may exceed one read)
   */
  IndexLookup(
      MapOutputCache cache,
      int shuffleId,
      ReadMetrics metrics,
      Peer peer,
      PeerLink link,
      boolean toDisk) {
    this.cache = cache;
    this.shuffleId = shuffleId;
    this.metrics = metrics;
    this.peer = peer;
    this.link = link;
    this.ranges = new BlockRangeCheck(toDisk);
  }

  /** One group of blocks being located: what it is (for logs), its blocks, and the result. */
  record Located(String step, List<Wanted> blocks, CompletableFuture<Found<LocatedBlock>> result) {}

  /**
   * Locates every block: from a cached index at once, else by one batch that reads the whole index
   * of each map output that may be cached and the entries of the others.
   */
  List<Located> locate(List<SlottedBlocks> maps) {
    List<Located> groups = new ArrayList<>();
    List<LocatedBlock> located = new ArrayList<>();
    List<Miss> misses = new ArrayList<>();
    List<Wanted> tooLarge = new ArrayList<>();
    List<Wanted> atOnce = new ArrayList<>();
    List<IndexRead> reads = new ArrayList<>();
    List<ReadRequest> reqs = new ArrayList<>();
    for (SlottedBlocks m : maps) {
      List<Wanted> blocks = m.map().blocks();
      DirectorySlot slot = m.slot();
      MapOutput cached = cache.cached(shuffleId, m.map().route(), slot.mapId());
      if (slot.entries() != null) {
        // Read with the slot in this request's slot batch: no index read.
        atOnce.addAll(blocks);
        for (Wanted w : blocks) {
          ranges.locate(w, m, slot.entries(), slot.checksums(), located, misses, tooLarge);
        }
      } else if (cached != null && cached.offsets() != null) {
        metrics.indexCacheHits(blocks.size());
        atOnce.addAll(blocks);
        for (Wanted w : blocks) {
          ranges.locate(
              w, m, cached.offsets(), cached.slot().checksums(), located, misses, tooLarge);
        }
      } else if (cache.wantsWholeIndex(wholeLength(slot))) {
        CompletableFuture<MapOutput> mine = new CompletableFuture<>();
        CompletableFuture<MapOutput> other =
            cache.joinIndexLoad(shuffleId, m.map().route(), slot.mapId(), mine);
        if (other == null) {
          // An MWS4 slot's metadata region: entries and checksums in this one read.
          reads.add(new IndexRead(m, blocks, mine, reqs.size(), false));
          reqs.add(ReadRequest.of(slot.index(), 0, (int) wholeLength(slot)));
        } else {
          // Another task of this executor is reading this index: use its result.
          metrics.indexCacheHits(blocks.size());
          groups.add(
              new Located(
                  "continuing blocks after a shared index read",
                  blocks,
                  other.handle((loaded, err) -> afterSharedLoad(m, loaded, err))));
        }
      } else {
        for (Wanted w : blocks) {
          long from = (long) w.start() * 8;
          int len = (w.end() - w.start() + 1) * 8;
          if (from + len > slot.indexLength()) {
            atOnce.add(w);
            misses.add(new Miss.Failure(List.of(w), BlockRangeCheck.outsideIndex(w, slot)));
            continue;
          }
          // From a metadata region, the block's checksums come in the same batch as its entries.
          boolean sums = slot.metadataEntries() > 0 && w.end() > w.start();
          reads.add(new IndexRead(m, List.of(w), null, reqs.size(), sums));
          reqs.add(ReadRequest.of(slot.index(), from, len));
          if (sums) {
            reqs.add(
                ReadRequest.of(
                    slot.index(),
                    slot.indexLength() + (long) w.start() * 8,
                    (w.end() - w.start()) * 8));
          }
        }
      }
    }
    Located batch = reads.isEmpty() ? null : postIndexReads(reads, reqs);
    if (batch != null && batch.result().isDone()) {
      groups.add(batch); // its post failed: those blocks leave before cached blocks' data
      batch = null;
    }
    if (!tooLarge.isEmpty()) {
      misses.add(tooLarge(tooLarge, null, null));
    }
    groups.add(
        new Located(
            "locating blocks from cached indexes",
            atOnce,
            CompletableFuture.completedFuture(new Found<>(located, misses))));
    if (batch != null) {
      groups.add(batch);
    }
    return groups;
  }

  private Located postIndexReads(List<IndexRead> reads, List<ReadRequest> reqs) {
    List<Wanted> reading = new ArrayList<>();
    reads.forEach(x -> reading.addAll(x.blocks));
    ReadBatch batch;
    try {
      batch = link.read(reqs);
    } catch (RuntimeException ex) {
      endLoads(reads, ex);
      return new Located(
          "reading index entries",
          reading,
          CompletableFuture.completedFuture(
              Found.none(
                  new Miss.Fallback(reading, FallbackCause.READ, "index read failed: " + ex, ex))));
    }
    metrics.metadataBatch();
    return new Located(
        "reading index entries",
        reading,
        batch
            .all()
            .handle(
                (ok, err) -> {
                  try {
                    return onIndexes(reads, batch);
                  } catch (RuntimeException ex) {
                    endLoads(reads, ex);
                    throw ex;
                  }
                }));
  }

  private Found<LocatedBlock> onIndexes(List<IndexRead> reads, ReadBatch batch) {
    List<LocatedBlock> data = new ArrayList<>();
    List<Miss> misses = new ArrayList<>();
    List<Wanted> unreadable = new ArrayList<>();
    String cause = null;
    Throwable error = null;
    for (IndexRead x : reads) {
      DirectorySlot slot = x.map.slot();
      TransferBuffer buf;
      TransferBuffer sumBuf = null;
      try {
        buf = batch.result(x.request).join();
        if (x.sums) {
          try {
            sumBuf = batch.result(x.request + 1).join();
          } catch (CompletionException e) {
            buf.release();
            throw e;
          }
        }
      } catch (CompletionException e) {
        unreadable.addAll(x.blocks);
        error = e.getCause();
        cause = "index read failed: " + error.getMessage();
        if (x.load != null) {
          cache.indexLoaded(shuffleId, x.map.map().route(), slot, x.load, null, error);
        }
        continue;
      }
      try {
        ByteBuffer b = buf.nioBuffer().order(ByteOrder.BIG_ENDIAN);
        if (x.load == null) {
          Wanted w = x.blocks.get(0);
          metrics.indexEntriesRead();
          long[] entries = new long[w.end() - w.start() + 1];
          for (int k = 0; k < entries.length; k++) {
            entries[k] = b.getLong(k * 8);
          }
          long[] values = null;
          if (sumBuf != null) {
            ByteBuffer v = sumBuf.nioBuffer().order(ByteOrder.BIG_ENDIAN);
            values = new long[w.end() - w.start()];
            for (int k = 0; k < values.length; k++) {
              values[k] = v.getLong(v.position() + k * 8);
            }
          }
          ranges.locate(
              w,
              x.map,
              entries,
              0,
              values == null ? null : slot.metadataAlgorithm(),
              values,
              w.start(),
              data,
              misses,
              unreadable);
        } else {
          metrics.wholeIndexRead();
          int n = slot.metadataEntries();
          long[] offsets =
              IndexFile.decode(
                  n > 0 ? b.duplicate().limit(b.position() + n * 8) : b, slot.dataLength());
          if (offsets == null) {
            InvalidIndexException e =
                new InvalidIndexException(
                    "index of map output "
                        + slot.mapId()
                        + " on "
                        + peer
                        + " is invalid ("
                        + b.remaining()
                        + " bytes for a data file of "
                        + slot.dataLength()
                        + " bytes)");
            cache.indexLoaded(shuffleId, x.map.map().route(), slot, x.load, null, e);
            misses.add(new Miss.Failure(x.blocks, e));
            continue;
          }
          DirectorySlot loaded = slot;
          if (n > 0) {
            long[] v = new long[n - 1];
            for (int k = 0; k < v.length; k++) {
              v[k] = b.getLong(b.position() + (n + k) * 8);
            }
            loaded = slot.withChecksums(new OutputChecksums(slot.metadataAlgorithm(), v));
          }
          cache.indexLoaded(
              shuffleId, x.map.map().route(), slot, x.load, new MapOutput(loaded, offsets), null);
          for (Wanted w : x.blocks) {
            ranges.locate(w, x.map, offsets, loaded.checksums(), data, misses, unreadable);
          }
        }
      } finally {
        buf.release();
        if (sumBuf != null) {
          sumBuf.release();
        }
      }
    }
    if (!unreadable.isEmpty()) {
      // One hand-over for the request's unreadable blocks, too-large ones included.
      misses.add(tooLarge(unreadable, cause, error));
    }
    return new Found<>(data, misses);
  }

  /** Spark's client for {@code blocks}: cause {@code read} when a read failed, else too large. */
  private static Miss tooLarge(List<Wanted> blocks, String readFailure, Throwable error) {
    return readFailure != null
        ? new Miss.Fallback(blocks, FallbackCause.READ, readFailure, error)
        : new Miss.Fallback(blocks, FallbackCause.TOO_LARGE, "block exceeds one read", null);
  }

  /** Ends (as failed) every whole-index load of {@code reads} not ended yet: none may hang. */
  private void endLoads(List<IndexRead> reads, Throwable cause) {
    for (IndexRead x : reads) {
      if (x.load != null) {
        cache.indexLoaded(shuffleId, x.map.map().route(), x.map.slot(), x.load, null, cause);
      }
    }
  }

  /** Locates blocks whose index another task loaded (or failed to). */
  private Found<LocatedBlock> afterSharedLoad(SlottedBlocks m, MapOutput loaded, Throwable err) {
    List<Wanted> blocks = m.map().blocks();
    if (err instanceof InvalidIndexException) {
      return Found.none(new Miss.Failure(blocks, err));
    }
    if (err != null) {
      return Found.none(
          new Miss.Fallback(
              blocks, FallbackCause.READ, "index read failed: " + Failures.rootMessage(err), err));
    }
    List<LocatedBlock> data = new ArrayList<>();
    List<Miss> misses = new ArrayList<>();
    List<Wanted> tooLarge = new ArrayList<>();
    for (Wanted w : blocks) {
      ranges.locate(w, m, loaded.offsets(), loaded.slot().checksums(), data, misses, tooLarge);
    }
    if (!tooLarge.isEmpty()) {
      misses.add(tooLarge(tooLarge, null, null));
    }
    return new Found<>(data, misses);
  }

  /** Bytes of a slot's whole index read: the index file, or the whole metadata region. */
  private static long wholeLength(DirectorySlot slot) {
    int n = slot.metadataEntries();
    return n > 0 ? DirectorySlot.metadataLength(n) : slot.index().length();
  }

  /**
   * One index read: a map output's whole index ({@code load}, the claimed load, set) or one block's
   * entries, the batch's request {@code request}; with {@code sums}, the block's checksums from its
   * metadata region are the request after it.
   */
  private record IndexRead(
      SlottedBlocks map,
      List<Wanted> blocks,
      CompletableFuture<MapOutput> load,
      int request,
      boolean sums) {}
}
