package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.Connection;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One fetch request (one peer, many blocks) read one-sided: connects, then runs its stages, and
 * ends each block exactly once (delivered, failed, or handed to Spark's client) with its metrics.
 * Stages, each posting one batch per step: location ({@link SlotLookup}, then {@link IndexLookup},
 * with the executor's slot and index cache), then data: {@link DataFetch} (blocks in memory) or
 * {@link ToDiskFetch} (blocks Spark wants on disk).
 *
 * <p>Ordering: slots before indexes before data; blocks located from the cache get their data
 * posted after the other blocks' index batch; blocks handed to Spark's client leave before the data
 * of the rest is posted. Threads: {@link #start()} runs on the task thread (when Spark issues the
 * request, or when its held step ends); every later step runs on the thread that completes the
 * previous read (a provider I/O or completion thread, the thread failing the connection, or the
 * posting thread when the read had ended already), except to-disk file writes (on {@code
 * memwire-shuffle-fallback-N}).
 */
final class FetchRequest {
  private static final Logger LOG = LoggerFactory.getLogger(FetchRequest.class);

  final ReadContext ctx;
  final int shuffleId;
  final String host;
  final int port;
  final String execId;
  final String peer;
  final Map<ReadContext.SlotKey, List<Wanted>> byMap;
  final BlockFetchingListener listener;

  /** Non-null when Spark wants this request's blocks on disk. */
  final DownloadFileManager toDisk;

  private final RdmaBlockStoreClient client;
  private final long startNanos = System.nanoTime();
  private final AtomicBoolean firstDelivered = new AtomicBoolean();
  private final SlotLookup location;
  Connection connection;

  FetchRequest(
      RdmaBlockStoreClient client,
      ReadContext ctx,
      int shuffleId,
      String host,
      int port,
      String execId,
      Map<ReadContext.SlotKey, List<Wanted>> byMap,
      BlockFetchingListener listener,
      DownloadFileManager toDisk) {
    this.client = client;
    this.ctx = ctx;
    this.shuffleId = shuffleId;
    this.host = host;
    this.port = port;
    this.execId = execId;
    this.peer = execId + "@" + host + ":" + port;
    this.byMap = byMap;
    this.listener = listener;
    this.toDisk = toDisk;
    this.location = new SlotLookup(this); // last: it reads the fields above
  }

  /** Connects to the peer and starts locating the blocks (task thread). */
  void start() {
    RemoteRegion any = byMap.keySet().iterator().next().pointer().region();
    try {
      connection = ctx.node.connection(any.node());
    } catch (TransferException | RuntimeException e) {
      fallbackAll(
          all(), FallbackCause.CONNECT, "cannot connect to " + any.node() + ": " + e.getMessage());
      return;
    }
    location.start();
  }

  /** Hands {@code unreadable} to Spark's client, then reads the located blocks' data. */
  void proceed(List<Wanted> data, List<Wanted> unreadable, String cause) {
    if (!unreadable.isEmpty()) {
      fallbackAll(
          unreadable,
          cause != null ? FallbackCause.READ : FallbackCause.TOO_LARGE,
          cause != null ? cause : "block exceeds one read");
    }
    if (toDisk != null) {
      new ToDiskFetch(this, data).next(0);
    } else {
      new DataFetch(this, data).post(0);
    }
  }

  /** Records the batch's latency (post to completion) in this peer's histogram. */
  ReadBatch timed(ReadBatch batch) {
    var unused = timed(batch.all());
    return batch;
  }

  <T> CompletableFuture<T> timed(CompletableFuture<T> read) {
    long posted = System.nanoTime();
    var unused =
        read.whenComplete(
            (ok, err) -> {
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

  /** Hands a block's bytes to Spark (once) and releases our reference on every path. */
  void deliver(Wanted w, ManagedBuffer buf, long bytes) {
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

  /** Reports a block as a fetch failure (once). */
  void fail(Wanted w, Throwable e) {
    if (w.done.compareAndSet(false, true)) {
      ctx.counters.failedBlocks.increment();
      listener.onBlockFetchFailure(w.id, e);
    }
  }

  /** Hands the blocks of {@code ws} not ended yet to Spark's client, counted as {@code cause}. */
  void fallbackAll(List<Wanted> ws, FallbackCause cause, String reason) {
    List<String> ids = new ArrayList<>();
    for (Wanted w : ws) {
      if (w.done.compareAndSet(false, true)) {
        ids.add(w.id);
      }
    }
    if (!ids.isEmpty()) {
      client.fallback(host, port, execId, ids, listener, toDisk, cause, reason, true);
    }
  }

  static String rootMessage(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || (c.getCause() != null && c.getMessage() == null))
        && c.getCause() != null) {
      c = c.getCause();
    }
    return String.valueOf(c.getMessage());
  }
}
