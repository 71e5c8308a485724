package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the blocks of one fetch request end, each exactly once whichever thread gets there first:
 * delivered to Spark, failed (FetchFailed), or handed to {@link SparkFallback}. Every stage ends
 * blocks through here, so the end counters and the fallback point are in one place. Thread-safe.
 */
final class BlockEnds {
  private static final Logger LOG = LoggerFactory.getLogger(BlockEnds.class);

  private final Peer peer;
  private final BlockFetchingListener listener;

  /** Non-null when Spark wants the request's blocks on disk. */
  private final DownloadFileManager toDisk;

  private final SparkFallback fallback;
  private final ReadMetrics metrics;
  private final long startNanos = System.nanoTime();
  private final AtomicBoolean firstDelivered = new AtomicBoolean();

  /**
   * Where blocks whose read or connect failed go instead of Spark's client (service mode: their
   * pointer is re-resolved once, {@link Reresolve}); null: straight to Spark's client.
   */
  private final Retry retry;

  /** Takes blocks, already ended here, whose one-sided read failed: it ends them elsewhere. */
  interface Retry {
    void retry(List<Wanted> blocks, FallbackCause cause, String reason);
  }

  /**
   * Blocks ended so far, by identity: each {@link Wanted} of a request is its own block, even where
   * two are equal as values.
   */
  private final Set<Wanted> ended =
      Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));

  BlockEnds(
      Peer peer,
      BlockFetchingListener listener,
      DownloadFileManager toDisk,
      SparkFallback fallback,
      ReadMetrics metrics) {
    this(peer, listener, toDisk, fallback, metrics, null);
  }

  BlockEnds(
      Peer peer,
      BlockFetchingListener listener,
      DownloadFileManager toDisk,
      SparkFallback fallback,
      ReadMetrics metrics,
      Retry retry) {
    this.retry = retry;
    this.peer = peer;
    this.listener = listener;
    this.toDisk = toDisk;
    this.fallback = fallback;
    this.metrics = metrics;
  }

  /** Claims {@code w}'s end: true for the one caller that ends it. */
  private boolean claim(Wanted w) {
    return ended.add(w);
  }

  boolean hasEnded(Wanted w) {
    return ended.contains(w);
  }

  /** The blocks of {@code ws} not ended yet. */
  List<Wanted> pending(List<Wanted> ws) {
    List<Wanted> out = new ArrayList<>(ws.size());
    for (Wanted w : ws) {
      if (!hasEnded(w)) {
        out.add(w);
      }
    }
    return out;
  }

  /** Hands a block's bytes to Spark (once) and releases our reference on every path. */
  void deliver(Wanted w, ManagedBuffer buf, long bytes) {
    if (!claim(w)) {
      buf.release();
      return;
    }
    if (firstDelivered.compareAndSet(false, true)) {
      metrics.firstBlock((System.nanoTime() - startNanos) / 1000);
    }
    metrics.delivered(w.batch(), bytes, toDisk != null);
    try {
      listener.onBlockFetchSuccess(w.id(), buf);
    } catch (RuntimeException e) {
      LOG.warn("Spark's fetch listener failed for {}", w.id(), e);
    } finally {
      buf.release();
    }
  }

  /** Reports a block as a fetch failure (once). */
  void fail(Wanted w, Throwable e) {
    if (claim(w)) {
      metrics.failed(1);
      listener.onBlockFetchFailure(w.id(), e);
    }
  }

  /**
   * Hands the blocks of {@code ws} not ended yet to {@link SparkFallback}, counted as cause; with a
   * {@link Retry}, those whose read or connect failed go there instead.
   */
  void fallback(List<Wanted> ws, FallbackCause cause, String reason) {
    List<Wanted> claimed = new ArrayList<>();
    List<String> ids = new ArrayList<>();
    for (Wanted w : ws) {
      if (claim(w)) {
        claimed.add(w);
        ids.add(w.id());
      }
    }
    if (!claimed.isEmpty()
        && retry != null
        && (cause == FallbackCause.READ || cause == FallbackCause.CONNECT)) {
      retry.retry(claimed, cause, reason);
      return;
    }
    if (!ids.isEmpty()) {
      fallback.handOver(peer, ids, listener, toDisk, cause, reason, true);
    }
  }

  /** Ends the blocks a stage could not locate, in the order it reported them. */
  void settle(List<Miss> misses) {
    for (Miss m : misses) {
      if (m instanceof Miss.Failure f) {
        f.blocks().forEach(w -> fail(w, f.error()));
      } else if (m instanceof Miss.Fallback f) {
        fallback(f.blocks(), f.cause(), f.reason());
      }
    }
  }
}
