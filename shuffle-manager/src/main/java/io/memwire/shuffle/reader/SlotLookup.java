package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Location stage, first half: gives each block of a fetch request its map output's directory slot,
 * from the executor's slot cache ({@link ReadContext}) or by one batch of slot reads, then hands on
 * to {@link IndexLookup}.
 *
 * <p>Ordering: a slot that names another map id (or does not decode) is dropped from the cache and
 * re-read once, all such slots in one more batch; if it is still wrong its blocks fail as fetch
 * failures (counted in {@code staleSlots}), so Spark reruns the map stage instead of reading the
 * wrong output. Unreadable slots send their blocks to Spark's client (cause {@code read}) before
 * the index stage starts. Each slot buffer is released once decoded.
 *
 * <p>Threads: {@link #start()} runs on the task thread; {@code onSlots} on the thread completing
 * the slot batch (a provider I/O or completion thread, or the thread failing the connection).
 */
final class SlotLookup {
  private static final Logger LOG = LoggerFactory.getLogger(SlotLookup.class);

  private final FetchRequest r;
  private final ReadContext ctx;
  private final int shuffleId;
  private final IndexLookup indexes;

  SlotLookup(FetchRequest r) {
    this.r = r;
    this.ctx = r.ctx;
    this.shuffleId = r.shuffleId;
    this.indexes = new IndexLookup(r);
  }

  /** Takes cached slots, then reads the missing ones or goes on to the indexes. */
  void start() {
    List<ReadContext.SlotKey> missing = new ArrayList<>();
    for (Map.Entry<ReadContext.SlotKey, List<Wanted>> e : r.byMap.entrySet()) {
      ReadContext.MapOutput cached = ctx.cached(shuffleId, e.getKey(), e.getValue().get(0).mapId);
      if (cached != null) {
        e.getValue().forEach(w -> w.slot = cached.slot());
      } else {
        missing.add(e.getKey());
      }
    }
    if (missing.isEmpty()) {
      indexes.start();
    } else {
      readSlots(missing, false);
    }
  }

  private void readSlots(List<ReadContext.SlotKey> keys, boolean reread) {
    List<ReadRequest> reqs = new ArrayList<>(keys.size());
    for (ReadContext.SlotKey k : keys) {
      reqs.add(
          ReadRequest.of(
              k.pointer().region(), k.pointer().slotOffset(k.mapIndex()), DirectorySlot.SIZE));
    }
    ReadBatch batch;
    try {
      batch = r.timed(r.connection.read(reqs));
    } catch (RuntimeException e) {
      r.fallbackAll(r.all(), FallbackCause.READ, "slot read failed: " + e);
      return;
    }
    ctx.counters.slotReads.add(keys.size());
    var unused =
        batch
            .all()
            .whenComplete(
                (ok, err) -> {
                  try {
                    onSlots(keys, batch, reread);
                  } catch (RuntimeException e) {
                    LOG.warn("reading directory slots from {} failed", r.peer, e);
                    r.fallbackAll(r.all(), FallbackCause.INTERNAL, "internal error: " + e);
                  }
                });
  }

  private void onSlots(List<ReadContext.SlotKey> keys, ReadBatch batch, boolean reread) {
    List<ReadContext.SlotKey> stale = new ArrayList<>();
    List<Wanted> unreadable = new ArrayList<>();
    String cause = null;
    for (int i = 0; i < keys.size(); i++) {
      ReadContext.SlotKey key = keys.get(i);
      List<Wanted> ws = r.byMap.get(key);
      TransferBuffer buf;
      try {
        buf = batch.result(i).join();
      } catch (CompletionException e) {
        unreadable.addAll(ws);
        cause = "directory read failed: " + e.getCause().getMessage();
        continue;
      }
      DirectorySlot slot;
      try {
        slot = DirectorySlot.read(buf.nioBuffer());
      } finally {
        buf.release();
      }
      long wantedId = ws.get(0).mapId;
      if (slot != null && slot.mapId() == wantedId && slot.mapIndex() == key.mapIndex()) {
        ctx.cacheSlot(shuffleId, key, slot);
        ws.forEach(w -> w.slot = slot);
      } else {
        ctx.drop(shuffleId, key);
        stale.add(key);
      }
    }
    if (!unreadable.isEmpty()) {
      r.fallbackAll(unreadable, FallbackCause.READ, cause);
    }
    if (!stale.isEmpty() && !reread) {
      readSlots(stale, true);
      return;
    }
    for (ReadContext.SlotKey key : stale) {
      List<Wanted> ws = r.byMap.get(key);
      ctx.counters.staleSlots.increment();
      IOException e =
          new IOException(
              "shuffle directory slot for map index "
                  + key.mapIndex()
                  + " on executor "
                  + r.execId
                  + " does not hold map output "
                  + ws.get(0).mapId
                  + " (stale or invalid after a re-read)");
      ws.forEach(w -> r.fail(w, e));
    }
    indexes.start();
  }
}
