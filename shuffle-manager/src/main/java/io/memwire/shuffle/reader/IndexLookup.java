package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.reader.IndexFile.InvalidIndexException;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Location stage, second half: finds each block's data range from its map output's index, cached
 * whole in {@link ReadContext} or read in one batch (whole, when the cache has room, else the
 * block's entries), then hands the located blocks to {@link FetchRequest#proceed}.
 *
 * <p>Ordering: blocks whose index is cached are handed on only after the other blocks' index batch
 * is posted, so the small index reads are not queued behind their data. A whole-index load is
 * claimed once per executor; other tasks wait on it. Every claimed load ends exactly once (loaded
 * or failed) on every path, so none of its waiters hangs, and a failure reaches all of them: an
 * invalid index fails their blocks, a read error hands them to Spark's client. Each index buffer is
 * released once decoded.
 *
 * <p>Threads: {@link #start()} runs on the thread that ended the slot stage (task or I/O thread);
 * {@code onIndexes} on the thread completing the index batch; {@code afterSharedLoad} on the thread
 * that ends the other task's load (or this one, when it had ended already).
 */
final class IndexLookup {
  private static final Logger LOG = LoggerFactory.getLogger(IndexLookup.class);

  private final FetchRequest r;
  private final ReadContext ctx;
  private final int shuffleId;

  IndexLookup(FetchRequest r) {
    this.r = r;
    this.ctx = r.ctx;
    this.shuffleId = r.shuffleId;
  }

  /**
   * Locates every pending block: from a cached index at once, else by one batch that reads the
   * whole index of each map output that may be cached and the entries of the others.
   */
  void start() {
    List<Wanted> located = new ArrayList<>();
    List<Wanted> unreadable = new ArrayList<>();
    List<IndexRead> reads = new ArrayList<>();
    List<ReadRequest> reqs = new ArrayList<>();
    for (Map.Entry<ReadContext.SlotKey, List<Wanted>> e : r.byMap.entrySet()) {
      List<Wanted> pending = new ArrayList<>();
      for (Wanted w : e.getValue()) {
        if (!w.done.get() && w.slot != null) {
          pending.add(w);
        }
      }
      if (pending.isEmpty()) {
        continue;
      }
      DirectorySlot slot = pending.get(0).slot;
      ReadContext.MapOutput cached = ctx.cached(shuffleId, e.getKey(), slot.mapId());
      if (cached != null && cached.offsets() != null) {
        ctx.counters.indexCacheHits.add(pending.size());
        for (Wanted w : pending) {
          locate(w, cached.offsets(), located, unreadable);
        }
      } else if (ctx.wantsWholeIndex(slot.index().length())) {
        CompletableFuture<long[]> mine = new CompletableFuture<>();
        CompletableFuture<long[]> other =
            ctx.joinIndexLoad(shuffleId, e.getKey(), slot.mapId(), mine);
        if (other == null) {
          reads.add(new IndexRead(e.getKey(), pending, mine));
          reqs.add(ReadRequest.of(slot.index(), 0, (int) slot.index().length()));
        } else {
          // Another task of this executor is reading this index: use its result.
          ctx.counters.indexCacheHits.add(pending.size());
          var unused = other.whenComplete((offsets, err) -> afterSharedLoad(pending, offsets, err));
        }
      } else {
        for (Wanted w : pending) {
          long from = (long) w.start * 8;
          int len = (w.end - w.start + 1) * 8;
          if (from + len > slot.index().length()) {
            r.fail(w, outsideIndex(w));
            continue;
          }
          reads.add(new IndexRead(null, List.of(w), null));
          reqs.add(ReadRequest.of(slot.index(), from, len));
        }
      }
    }
    if (!reads.isEmpty()) {
      postIndexReads(reads, reqs);
    }
    // After the index batch, so the small index reads are not queued behind this data.
    r.proceed(located, unreadable, null);
  }

  private void postIndexReads(List<IndexRead> reads, List<ReadRequest> reqs) {
    List<Wanted> reading = new ArrayList<>();
    reads.forEach(x -> reading.addAll(x.blocks));
    ReadBatch batch;
    try {
      batch = r.timed(r.connection.read(reqs));
    } catch (RuntimeException ex) {
      endLoads(reads, ex);
      r.fallbackAll(reading, FallbackCause.READ, "index read failed: " + ex);
      return;
    }
    var unused =
        batch
            .all()
            .whenComplete(
                (ok, err) -> {
                  try {
                    onIndexes(reads, batch);
                  } catch (RuntimeException ex) {
                    LOG.warn("reading index entries from {} failed", r.peer, ex);
                    endLoads(reads, ex);
                    r.fallbackAll(reading, FallbackCause.INTERNAL, "internal error: " + ex);
                  }
                });
  }

  private void onIndexes(List<IndexRead> reads, ReadBatch batch) {
    List<Wanted> data = new ArrayList<>();
    List<Wanted> unreadable = new ArrayList<>();
    String cause = null;
    for (int i = 0; i < reads.size(); i++) {
      IndexRead x = reads.get(i);
      TransferBuffer buf;
      try {
        buf = batch.result(i).join();
      } catch (CompletionException e) {
        unreadable.addAll(x.blocks);
        cause = "index read failed: " + e.getCause().getMessage();
        if (x.key != null) {
          ctx.indexLoaded(shuffleId, x.key, x.blocks.get(0).slot, x.load, null, e.getCause());
        }
        continue;
      }
      try {
        ByteBuffer b = buf.nioBuffer().order(ByteOrder.BIG_ENDIAN);
        if (x.key == null) {
          Wanted w = x.blocks.get(0);
          ctx.counters.indexEntryReads.increment();
          locate(w, b.getLong(0), b.getLong((w.end - w.start) * 8), data, unreadable);
        } else {
          ctx.counters.indexReads.increment();
          DirectorySlot slot = x.blocks.get(0).slot;
          long[] offsets = IndexFile.decode(b, slot.dataLength());
          if (offsets == null) {
            InvalidIndexException e =
                new InvalidIndexException(
                    "index of map output "
                        + slot.mapId()
                        + " on "
                        + r.peer
                        + " is invalid ("
                        + b.remaining()
                        + " bytes for a data file of "
                        + slot.dataLength()
                        + " bytes)");
            ctx.indexLoaded(shuffleId, x.key, slot, x.load, null, e);
            x.blocks.forEach(w -> r.fail(w, e));
            continue;
          }
          ctx.indexLoaded(shuffleId, x.key, slot, x.load, offsets, null);
          for (Wanted w : x.blocks) {
            locate(w, offsets, data, unreadable);
          }
        }
      } finally {
        buf.release();
      }
    }
    r.proceed(data, unreadable, cause);
  }

  /** Ends (as failed) every whole-index load of {@code reads} not ended yet: none may hang. */
  private void endLoads(List<IndexRead> reads, Throwable cause) {
    for (IndexRead x : reads) {
      if (x.key != null) {
        ctx.indexLoaded(shuffleId, x.key, x.blocks.get(0).slot, x.load, null, cause);
      }
    }
  }

  /** Continues blocks whose index another task loaded (or failed to). */
  private void afterSharedLoad(List<Wanted> blocks, long[] offsets, Throwable err) {
    try {
      if (err instanceof InvalidIndexException) {
        blocks.forEach(w -> r.fail(w, err));
        return;
      }
      if (err != null) {
        r.fallbackAll(
            blocks, FallbackCause.READ, "index read failed: " + FetchRequest.rootMessage(err));
        return;
      }
      List<Wanted> data = new ArrayList<>();
      List<Wanted> unreadable = new ArrayList<>();
      for (Wanted w : blocks) {
        locate(w, offsets, data, unreadable);
      }
      r.proceed(data, unreadable, null);
    } catch (RuntimeException e) {
      LOG.warn("continuing blocks of {} after a shared index read failed", r.peer, e);
      r.fallbackAll(blocks, FallbackCause.INTERNAL, "internal error: " + e);
    }
  }

  /** Locates a block from its map output's whole index. */
  private void locate(Wanted w, long[] offsets, List<Wanted> data, List<Wanted> unreadable) {
    if (w.end >= offsets.length) {
      r.fail(w, outsideIndex(w));
    } else {
      locate(w, offsets[w.start], offsets[w.end], data, unreadable);
    }
  }

  /** Checks a block's range against its data file and queues it for reading. */
  private void locate(Wanted w, long first, long last, List<Wanted> data, List<Wanted> unreadable) {
    if (first < 0 || last < first || last > w.slot.dataLength()) {
      r.fail(
          w,
          new IOException(
              "index entries of block "
                  + w.id
                  + " are invalid: ["
                  + first
                  + ", "
                  + last
                  + ") in a data file of "
                  + w.slot.dataLength()
                  + " bytes"));
    } else if (r.toDisk == null && last - first > Integer.MAX_VALUE) {
      unreadable.add(w);
    } else {
      w.offset = first;
      w.length = last - first;
      data.add(w);
    }
  }

  private static IOException outsideIndex(Wanted w) {
    return new IOException(
        "block "
            + w.id
            + " is outside map output "
            + w.mapId
            + "'s index of "
            + w.slot.index().length()
            + " bytes");
  }

  /**
   * One index read: a map output's whole index ({@code key} and the claimed {@code load} set) or
   * one block's entries.
   */
  private record IndexRead(
      ReadContext.SlotKey key, List<Wanted> blocks, CompletableFuture<long[]> load) {}
}
