package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.transfer.Connection;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.network.buffer.NioManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFile;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.apache.spark.network.shuffle.DownloadFileWritableChannel;
import org.apache.spark.network.shuffle.checksum.Cause;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block-store client one reduce task hands to Spark's ShuffleBlockFetcherIterator. For each
 * fetch request (one peer, many blocks) it reads, all with one-sided reads and each step posted as
 * one batch: the directory slots not yet known to this executor, the index of each map output not
 * yet cached (the whole file, kept for later tasks, or only the entries {@code [r, r+1]} / {@code
 * [a, b]} when the cache is full or off), then the data ranges. Once an executor has read a map
 * output's slot and index, its later reduce tasks reach the data in one round trip. Blocks it
 * cannot read that way go to Spark's own client; a directory slot that still names another map id
 * after one re-read fails its blocks, so Spark reruns the map stage instead of reading the wrong
 * output.
 *
 * <p>The reader brackets each step of Spark's iterator (its construction, each {@code next()})
 * with {@link #holdRequests()} and {@link #releaseRequests()}: fetch requests Spark issues inside
 * the step are queued and posted together when control returns to the reader. Spark issues
 * several requests back to back and, from 4.1 on, counts the time spent issuing them as fetch
 * wait; posting one request starts its transfer at once, whose I/O threads then compete with the
 * task thread for the CPU before it has issued the next request.
 */
public final class RdmaBlockStoreClient extends BlockStoreClient {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaBlockStoreClient.class);

  /** Where a map output's slot is: its directory chunk and its map index. */
  public record Route(DirectoryPointer pointer, int mapIndex) {}

  private final ReadContext ctx;
  private final int shuffleId;
  private final Map<Long, Route> routes;
  private final BlockStoreClient fallback;
  /** The thread whose requests are held, or null; only that thread touches {@link #held}. */
  private Thread holder;
  /** Requests held so far, in the order issued; null while there are none. */
  private List<Runnable> held;

  /**
   * @param routes by map id, for every map output whose location carried a directory pointer
   * @param fallback Spark's own client ({@code blockManager.blockStoreClient})
   */
  public RdmaBlockStoreClient(ReadContext ctx, int shuffleId, Map<Long, Route> routes,
      BlockStoreClient fallback) {
    this.ctx = ctx;
    this.shuffleId = shuffleId;
    this.routes = routes;
    this.fallback = fallback;
  }

  @Override
  public void fetchBlocks(String host, int port, String execId, String[] blockIds,
      BlockFetchingListener listener, DownloadFileManager downloadFileManager) {
    if (ctx.delegateAll != null) {
      // Decided for the whole application at start (and logged then): no per-peer log line.
      List<String> all = List.of(blockIds);
      post(() -> fallback(host, port, execId, all, listener, downloadFileManager,
          ctx.delegateAll, "reads delegated to Spark", false));
      return;
    }
    String peer = execId + "@" + host + ":" + port;
    List<String> viaSpark = new ArrayList<>();
    String reason = null;
    FallbackCause cause = null;
    Map<ReadContext.SlotKey, List<Wanted>> byMap = new LinkedHashMap<>();
    for (String id : blockIds) {
      Wanted w = parse(id);
      if (w == null) {
        viaSpark.add(id);
        reason = "no memwire directory published for its map outputs";
        cause = FallbackCause.NO_DIRECTORY;
      } else if (w.route.pointer().region().segments().get(0).provider() != ctx.node.provider()) {
        viaSpark.add(id);
        reason = "peer serves over " + w.route.pointer().region().segments().get(0).provider()
            + ", this executor reads over " + ctx.node.provider();
        cause = FallbackCause.PROVIDER_MISMATCH;
      } else {
        byMap.computeIfAbsent(new ReadContext.SlotKey(w.route.pointer(), w.route.mapIndex()),
            k -> new ArrayList<>()).add(w);
      }
    }
    if (!viaSpark.isEmpty()) {
      String why = reason;
      FallbackCause c = cause;
      post(() -> fallback(host, port, execId, viaSpark, listener, downloadFileManager, c, why,
          true));
    }
    if (!byMap.isEmpty()) {
      // A download-file manager means Spark wants this request's blocks on disk (above
      // spark.network.maxRemoteBlockSizeFetchToMem).
      PeerFetch f = new PeerFetch(host, port, execId, peer, byMap, listener, downloadFileManager);
      post(f::start);
    }
  }

  private void post(Runnable start) {
    if (holder == Thread.currentThread()) {
      if (held == null) {
        held = new ArrayList<>(4);
      }
      held.add(start);
    } else {
      start.run();
    }
  }

  /** Queues the requests this thread issues from now on, until {@link #releaseRequests()}. */
  public void holdRequests() {
    holder = Thread.currentThread();
  }

  /** Posts the queued requests, in the order Spark issued them, and stops holding. */
  public void releaseRequests() {
    List<Runnable> queued = held;
    holder = null;
    held = null;
    if (queued != null) {
      queued.forEach(Runnable::run);
    }
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
    if (b instanceof ShuffleBlockId) {
      ShuffleBlockId s = (ShuffleBlockId) b;
      if (s.shuffleId() != shuffleId) {
        return null;
      }
      mapId = s.mapId();
      start = s.reduceId();
      end = start + 1;
    } else if (b instanceof ShuffleBlockBatchId) {
      ShuffleBlockBatchId s = (ShuffleBlockBatchId) b;
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
    if (r == null || r.pointer().slotOffset(r.mapIndex()) < 0 || end <= start) {
      return null;
    }
    return new Wanted(id, mapId, r, start, end, batch);
  }

  /** Hands blocks to Spark's own client on another thread (it may block connecting). */
  private void fallback(String host, int port, String execId, List<String> ids,
      BlockFetchingListener listener, DownloadFileManager dfm, FallbackCause cause, String reason,
      boolean log) {
    if (!ctx.fallbackAllowed) {
      IOException e = new IOException("blocks of executor " + execId + " cannot be read one-sided ("
          + reason + ") and spark.shuffle.rdma.fallback=false");
      ctx.counters.failedBlocks.add(ids.size());
      for (String id : ids) {
        listener.onBlockFetchFailure(id, e);
      }
      return;
    }
    if (log) {
      ctx.logFallback(execId + "@" + host + ":" + port, reason);
    }
    ctx.counters.fallback(cause, ids.size());
    String[] array = ids.toArray(new String[0]);
    try {
      ctx.fallbackThreads.execute(() -> {
        try {
          fallback.fetchBlocks(host, port, execId, array, listener, dfm);
        } catch (Throwable t) {
          for (String id : array) {
            listener.onBlockFetchFailure(id, t);
          }
        }
      });
    } catch (RuntimeException rejected) {
      for (String id : array) {
        listener.onBlockFetchFailure(id, new IOException("shuffle manager stopped", rejected));
      }
    }
  }

  @Override
  public Cause diagnoseCorruption(String host, int port, String execId, int shuffleId, long mapId,
      int reduceId, long checksum, String algorithm) {
    try {
      return fallback.diagnoseCorruption(host, port, execId, shuffleId, mapId, reduceId, checksum,
          algorithm);
    } catch (RuntimeException e) {
      return Cause.UNKNOWN_ISSUE;
    }
  }

  @Override
  public void close() {
    // Per-task object: the node, pool and Spark's client belong to others.
  }

  /** One requested block and, once known, where its bytes are. */
  private static final class Wanted {
    final String id;
    final long mapId;
    final Route route;
    final int start;
    final int end;
    final boolean batch;
    final AtomicBoolean done = new AtomicBoolean();
    DirectorySlot slot;
    long offset;
    long length;

    Wanted(String id, long mapId, Route route, int start, int end, boolean batch) {
      this.id = id;
      this.mapId = mapId;
      this.route = route;
      this.start = start;
      this.end = end;
      this.batch = batch;
    }
  }

  /** The reads of one fetch request: slots, index entries, data; each step one batch. */
  private final class PeerFetch {
    final String host;
    final int port;
    final String execId;
    final String peer;
    final Map<ReadContext.SlotKey, List<Wanted>> byMap;
    final BlockFetchingListener listener;
    final DownloadFileManager toDisk;
    final long startNanos = System.nanoTime();
    final AtomicBoolean firstDelivered = new AtomicBoolean();
    Connection connection;

    PeerFetch(String host, int port, String execId, String peer,
        Map<ReadContext.SlotKey, List<Wanted>> byMap, BlockFetchingListener listener,
        DownloadFileManager toDisk) {
      this.host = host;
      this.port = port;
      this.execId = execId;
      this.peer = peer;
      this.byMap = byMap;
      this.listener = listener;
      this.toDisk = toDisk;
    }

    void start() {
      RemoteRegion any = byMap.keySet().iterator().next().pointer().region();
      try {
        connection = ctx.node.connection(any.node());
      } catch (TransferException | RuntimeException e) {
        fallbackAll(all(), FallbackCause.CONNECT,
            "cannot connect to " + any.node() + ": " + e.getMessage());
        return;
      }
      List<ReadContext.SlotKey> missing = new ArrayList<>();
      for (Map.Entry<ReadContext.SlotKey, List<Wanted>> e : byMap.entrySet()) {
        ReadContext.MapOutput cached =
            ctx.cached(shuffleId, e.getKey(), e.getValue().get(0).mapId);
        if (cached != null) {
          e.getValue().forEach(w -> w.slot = cached.slot());
        } else {
          missing.add(e.getKey());
        }
      }
      if (missing.isEmpty()) {
        readIndexes();
      } else {
        readSlots(missing, false);
      }
    }

    /** Records the batch's latency (post to completion) in this peer's histogram. */
    ReadBatch timed(ReadBatch batch) {
      timed(batch.all());
      return batch;
    }

    <T> CompletableFuture<T> timed(CompletableFuture<T> read) {
      long posted = System.nanoTime();
      read.whenComplete((ok, err) -> {
        if (err == null) {
          ctx.latencies.record(execId, (System.nanoTime() - posted) / 1000);
        }
      });
      return read;
    }

    List<Wanted> all() {
      List<Wanted> list = new ArrayList<>();
      byMap.values().forEach(list::addAll);
      return list;
    }

    void readSlots(List<ReadContext.SlotKey> keys, boolean reread) {
      List<ReadRequest> reqs = new ArrayList<>(keys.size());
      for (ReadContext.SlotKey k : keys) {
        reqs.add(ReadRequest.of(k.pointer().region(), k.pointer().slotOffset(k.mapIndex()),
            DirectorySlot.SIZE));
      }
      ReadBatch batch;
      try {
        batch = timed(connection.read(reqs));
      } catch (RuntimeException e) {
        fallbackAll(all(), FallbackCause.READ, "slot read failed: " + e);
        return;
      }
      ctx.counters.slotReads.add(keys.size());
      batch.all().whenComplete((ok, err) -> {
        try {
          onSlots(keys, batch, reread);
        } catch (RuntimeException e) {
          LOG.warn("reading directory slots from {} failed", peer, e);
          fallbackAll(all(), FallbackCause.INTERNAL, "internal error: " + e);
        }
      });
    }

    void onSlots(List<ReadContext.SlotKey> keys, ReadBatch batch, boolean reread) {
      List<ReadContext.SlotKey> stale = new ArrayList<>();
      List<Wanted> unreadable = new ArrayList<>();
      String cause = null;
      for (int i = 0; i < keys.size(); i++) {
        ReadContext.SlotKey key = keys.get(i);
        List<Wanted> ws = byMap.get(key);
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
        fallbackAll(unreadable, FallbackCause.READ, cause);
      }
      if (!stale.isEmpty() && !reread) {
        readSlots(stale, true);
        return;
      }
      for (ReadContext.SlotKey key : stale) {
        List<Wanted> ws = byMap.get(key);
        ctx.counters.staleSlots.increment();
        IOException e = new IOException("shuffle directory slot for map index " + key.mapIndex()
            + " on executor " + execId + " does not hold map output " + ws.get(0).mapId
            + " (stale or invalid after a re-read)");
        ws.forEach(w -> fail(w, e));
      }
      readIndexes();
    }

    /**
     * Locates every pending block: from a cached index at once, else by one batch that reads the
     * whole index of each map output that may be cached and the entries of the others.
     */
    void readIndexes() {
      List<Wanted> located = new ArrayList<>();
      List<Wanted> unreadable = new ArrayList<>();
      List<IndexRead> reads = new ArrayList<>();
      List<ReadRequest> reqs = new ArrayList<>();
      for (Map.Entry<ReadContext.SlotKey, List<Wanted>> e : byMap.entrySet()) {
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
            other.whenComplete((offsets, err) -> afterSharedLoad(pending, offsets, err));
          }
        } else {
          for (Wanted w : pending) {
            long from = (long) w.start * 8;
            int len = (w.end - w.start + 1) * 8;
            if (from + len > slot.index().length()) {
              fail(w, outsideIndex(w));
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
      // Blocks located from the cache need not wait for the others' index reads; posted after
      // them, so the small index reads are not queued behind this data.
      proceed(located, unreadable, null);
    }

    /** Reads the located blocks; hands those too large for one read to Spark's client. */
    void proceed(List<Wanted> data, List<Wanted> unreadable, String cause) {
      if (!unreadable.isEmpty()) {
        fallbackAll(unreadable, cause != null ? FallbackCause.READ : FallbackCause.TOO_LARGE,
            cause != null ? cause : "block exceeds one read");
      }
      readData(data, 0);
    }

    void postIndexReads(List<IndexRead> reads, List<ReadRequest> reqs) {
      List<Wanted> reading = new ArrayList<>();
      reads.forEach(r -> reading.addAll(r.blocks));
      ReadBatch batch;
      try {
        batch = timed(connection.read(reqs));
      } catch (RuntimeException ex) {
        endLoads(reads, ex);
        fallbackAll(reading, FallbackCause.READ, "index read failed: " + ex);
        return;
      }
      batch.all().whenComplete((ok, err) -> {
        try {
          onIndexes(reads, batch);
        } catch (RuntimeException ex) {
          LOG.warn("reading index entries from {} failed", peer, ex);
          endLoads(reads, ex);
          fallbackAll(reading, FallbackCause.INTERNAL, "internal error: " + ex);
        }
      });
    }

    void onIndexes(List<IndexRead> reads, ReadBatch batch) {
      List<Wanted> data = new ArrayList<>();
      List<Wanted> unreadable = new ArrayList<>();
      String cause = null;
      for (int i = 0; i < reads.size(); i++) {
        IndexRead r = reads.get(i);
        TransferBuffer buf;
        try {
          buf = batch.result(i).join();
        } catch (CompletionException e) {
          unreadable.addAll(r.blocks);
          cause = "index read failed: " + e.getCause().getMessage();
          if (r.key != null) {
            ctx.indexLoaded(shuffleId, r.key, r.blocks.get(0).slot, r.load, null, e.getCause());
          }
          continue;
        }
        try {
          ByteBuffer b = buf.nioBuffer().order(ByteOrder.BIG_ENDIAN);
          if (r.key == null) {
            Wanted w = r.blocks.get(0);
            ctx.counters.indexEntryReads.increment();
            locate(w, b.getLong(0), b.getLong((w.end - w.start) * 8), data, unreadable);
          } else {
            ctx.counters.indexReads.increment();
            DirectorySlot slot = r.blocks.get(0).slot;
            long[] offsets = decodeIndex(b, slot.dataLength());
            if (offsets == null) {
              InvalidIndexException e = new InvalidIndexException("index of map output "
                  + slot.mapId() + " on " + peer + " is invalid (" + b.remaining()
                  + " bytes for a data file of " + slot.dataLength() + " bytes)");
              ctx.indexLoaded(shuffleId, r.key, slot, r.load, null, e);
              r.blocks.forEach(w -> fail(w, e));
              continue;
            }
            ctx.indexLoaded(shuffleId, r.key, slot, r.load, offsets, null);
            for (Wanted w : r.blocks) {
              locate(w, offsets, data, unreadable);
            }
          }
        } finally {
          buf.release();
        }
      }
      proceed(data, unreadable, cause);
    }

    /** Ends (as failed) every whole-index load of {@code reads} not ended yet: none may hang. */
    void endLoads(List<IndexRead> reads, Throwable cause) {
      for (IndexRead r : reads) {
        if (r.key != null) {
          ctx.indexLoaded(shuffleId, r.key, r.blocks.get(0).slot, r.load, null, cause);
        }
      }
    }

    /** Continues blocks whose index another task loaded (or failed to). */
    void afterSharedLoad(List<Wanted> blocks, long[] offsets, Throwable err) {
      try {
        if (err instanceof InvalidIndexException) {
          blocks.forEach(w -> fail(w, err));
          return;
        }
        if (err != null) {
          fallbackAll(blocks, FallbackCause.READ, "index read failed: " + rootMessage(err));
          return;
        }
        List<Wanted> data = new ArrayList<>();
        List<Wanted> unreadable = new ArrayList<>();
        for (Wanted w : blocks) {
          locate(w, offsets, data, unreadable);
        }
        proceed(data, unreadable, null);
      } catch (RuntimeException e) {
        LOG.warn("continuing blocks of {} after a shared index read failed", peer, e);
        fallbackAll(blocks, FallbackCause.INTERNAL, "internal error: " + e);
      }
    }

    /** Locates a block from its map output's whole index. */
    void locate(Wanted w, long[] offsets, List<Wanted> data, List<Wanted> unreadable) {
      if (w.end >= offsets.length) {
        fail(w, outsideIndex(w));
      } else {
        locate(w, offsets[w.start], offsets[w.end], data, unreadable);
      }
    }

    /** Checks a block's range against its data file and queues it for reading. */
    void locate(Wanted w, long first, long last, List<Wanted> data, List<Wanted> unreadable) {
      if (first < 0 || last < first || last > w.slot.dataLength()) {
        fail(w, new IOException("index entries of block " + w.id + " are invalid: [" + first
            + ", " + last + ") in a data file of " + w.slot.dataLength() + " bytes"));
      } else if (toDisk == null && last - first > Integer.MAX_VALUE) {
        unreadable.add(w);
      } else {
        w.offset = first;
        w.length = last - first;
        data.add(w);
      }
    }

    IOException outsideIndex(Wanted w) {
      return new IOException("block " + w.id + " is outside map output " + w.mapId
          + "'s index of " + w.slot.index().length() + " bytes");
    }

    /** Posts data reads from {@code from} on, within the batch limits; the rest when they end. */
    void readData(List<Wanted> blocks, int from) {
      if (toDisk != null) {
        readToDisk(blocks, from);
        return;
      }
      List<Wanted> batchBlocks = new ArrayList<>();
      List<ReadRequest> reqs = new ArrayList<>();
      long bytes = 0;
      int i = from;
      for (; i < blocks.size(); i++) {
        Wanted w = blocks.get(i);
        if (w.length == 0) {
          // Spark reports a zero-size block as a fetch failure, as with its own transfer.
          deliver(w, new NioManagedBuffer(ByteBuffer.allocate(0)), 0);
          continue;
        }
        if (!batchBlocks.isEmpty() && (batchBlocks.size() >= ctx.readBatchBlocks
            || bytes + w.length > ctx.readBatchBytes)) {
          break;
        }
        batchBlocks.add(w);
        reqs.add(ReadRequest.of(w.slot.data(), w.offset, (int) w.length));
        bytes += w.length;
      }
      if (batchBlocks.isEmpty()) {
        return;
      }
      int next = i;
      ReadBatch batch;
      try {
        batch = timed(connection.read(reqs));
      } catch (RuntimeException e) {
        fallbackAll(blocks.subList(from, blocks.size()), FallbackCause.READ,
            "data read failed: " + e);
        return;
      }
      for (int k = 0; k < batchBlocks.size(); k++) {
        Wanted w = batchBlocks.get(k);
        CompletableFuture<TransferBuffer> f = batch.result(k);
        f.whenComplete((buf, err) -> {
          if (err != null) {
            ctx.drop(shuffleId, new ReadContext.SlotKey(w.route.pointer(), w.route.mapIndex()));
            fallbackAll(List.of(w), FallbackCause.READ,
                "data read failed: " + rootMessage(err));
          } else {
            deliver(w, new TransferManagedBuffer(buf), w.length);
          }
        });
      }
      if (next < blocks.size()) {
        batch.all().whenComplete((ok, err) -> readData(blocks, next));
      }
    }

    /**
     * Streams blocks Spark wants on disk into its temp files, one block after another, each in
     * reads of at most readBatchBytes; the file writes run on a pool thread, never on the I/O
     * thread.
     */
    void readToDisk(List<Wanted> blocks, int i) {
      while (i < blocks.size() && blocks.get(i).done.get()) {
        i++;
      }
      if (i >= blocks.size()) {
        return;
      }
      Wanted w = blocks.get(i);
      DownloadFile file;
      DownloadFileWritableChannel channel;
      try {
        file = toDisk.createTempFile(ctx.transportConf());
        channel = file.openForWriting();
      } catch (IOException | RuntimeException e) {
        fail(w, e);
        readToDisk(blocks, i + 1);
        return;
      }
      readPiece(blocks, i, file, channel, 0);
    }

    private void readPiece(List<Wanted> blocks, int i, DownloadFile file,
        DownloadFileWritableChannel channel, long done) {
      Wanted w = blocks.get(i);
      int n = (int) Math.min(w.length - done, ctx.readBatchBytes); // readBatchBytes <= 1 GiB
      if (n == 0) {
        finishFile(blocks, i, file, channel);
        return;
      }
      CompletableFuture<TransferBuffer> f;
      try {
        f = timed(connection.read(ReadRequest.of(w.slot.data(), w.offset + done, n)));
      } catch (RuntimeException e) {
        discard(file, channel);
        fallbackAll(blocks.subList(i, blocks.size()), FallbackCause.READ,
            "data read failed: " + e);
        return;
      }
      f.whenCompleteAsync((buf, err) -> {
        if (err != null) {
          discard(file, channel);
          ctx.drop(shuffleId, new ReadContext.SlotKey(w.route.pointer(), w.route.mapIndex()));
          fallbackAll(blocks.subList(i, blocks.size()), FallbackCause.READ,
              "data read failed: " + rootMessage(err));
          return;
        }
        try {
          ByteBuffer b = buf.nioBuffer();
          while (b.hasRemaining()) {
            channel.write(b);
          }
        } catch (IOException | RuntimeException e) {
          discard(file, channel);
          fail(w, e);
          readToDisk(blocks, i + 1);
          return;
        } finally {
          buf.release();
        }
        if (done + n < w.length) {
          readPiece(blocks, i, file, channel, done + n);
        } else {
          finishFile(blocks, i, file, channel);
        }
      }, ctx.fallbackThreads);
    }

    private void finishFile(List<Wanted> blocks, int i, DownloadFile file,
        DownloadFileWritableChannel channel) {
      Wanted w = blocks.get(i);
      org.apache.spark.network.buffer.ManagedBuffer onDisk;
      try {
        onDisk = channel.closeAndRead();
      } catch (IOException | RuntimeException e) {
        file.delete();
        fail(w, e);
        readToDisk(blocks, i + 1);
        return;
      }
      ctx.counters.rdmaBlocksToDisk.increment();
      deliver(w, onDisk, w.length);
      // Spark deletes the file when the iterator is done with it; if it already is, we do.
      if (!toDisk.registerTempFileToClean(file)) {
        file.delete();
      }
      readToDisk(blocks, i + 1);
    }

    private void discard(DownloadFile file, DownloadFileWritableChannel channel) {
      try {
        channel.close();
      } catch (IOException | RuntimeException e) {
        LOG.debug("closing temp file {}", file.path(), e);
      }
      file.delete();
    }

    void deliver(Wanted w, org.apache.spark.network.buffer.ManagedBuffer buf, long bytes) {
      if (!w.done.compareAndSet(false, true)) {
        buf.release();
        return;
      }
      if (firstDelivered.compareAndSet(false, true)) {
        ctx.counters.fetchRequests.increment();
        ctx.counters.firstBlockMicros.add((System.nanoTime() - startNanos) / 1000);
      }
      ctx.counters.rdmaBlocks.increment();
      if (w.batch) {
        ctx.counters.rdmaBatchBlocks.increment();
      }
      ctx.counters.rdmaBytes.add(bytes);
      try {
        listener.onBlockFetchSuccess(w.id, buf);
      } catch (RuntimeException e) {
        LOG.warn("Spark's fetch listener failed for {}", w.id, e);
      } finally {
        buf.release();
      }
    }

    void fail(Wanted w, Throwable e) {
      if (w.done.compareAndSet(false, true)) {
        ctx.counters.failedBlocks.increment();
        listener.onBlockFetchFailure(w.id, e);
      }
    }

    void fallbackAll(List<Wanted> ws, FallbackCause cause, String reason) {
      List<String> ids = new ArrayList<>();
      for (Wanted w : ws) {
        if (w.done.compareAndSet(false, true)) {
          ids.add(w.id);
        }
      }
      if (!ids.isEmpty()) {
        fallback(host, port, execId, ids, listener, toDisk, cause, reason, true);
      }
    }
  }

  /** A whole index whose bytes are not an index file: its blocks fail, they are not retried. */
  private static final class InvalidIndexException extends IOException {
    InvalidIndexException(String message) {
      super(message);
    }
  }

  /**
   * One index read: a map output's whole index ({@code key} and the claimed {@code load} set) or
   * one block's entries.
   */
  private record IndexRead(ReadContext.SlotKey key, List<Wanted> blocks,
      CompletableFuture<long[]> load) {}

  /**
   * Decodes a whole index file: at least two big-endian offsets, starting at 0, never decreasing,
   * the last no beyond the data file.
   *
   * @return the offsets, or null when the bytes are not such an index
   */
  static long[] decodeIndex(ByteBuffer b, long dataLength) {
    int n = b.remaining() / 8;
    if (b.remaining() % 8 != 0 || n < 2) {
      return null;
    }
    long[] offsets = new long[n];
    int base = b.position();
    long previous = 0;
    for (int i = 0; i < n; i++) {
      long v = b.getLong(base + i * 8);
      if (v < previous || (i == 0 && v != 0)) {
        return null;
      }
      offsets[i] = v;
      previous = v;
    }
    return offsets[n - 1] <= dataLength ? offsets : null;
  }

  private static String rootMessage(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || c.getCause() != null && c.getMessage() == null)
        && c.getCause() != null) {
      c = c.getCause();
    }
    return String.valueOf(c.getMessage());
  }
}
