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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the blocks of one fetch request end, each exactly once whichever thread gets there first:
 * delivered to Spark, failed (FetchFailed), or leaving the one-sided path ({@link Leave}: the
 * request's {@link FetchRun} decides where they go). Every stage ends blocks through here, so the
 * end counters are in one place. Thread-safe.
 */
final class BlockEnds {
  private static final Logger LOG = LoggerFactory.getLogger(BlockEnds.class);

  private final BlockFetchingListener listener;

  /** Whether Spark wants the request's blocks on disk (counted apart). */
  private final boolean toDisk;

  private final ReadMetrics metrics;
  private final Leave leave;
  private final long startNanos = System.nanoTime();
  private final AtomicBoolean firstDelivered = new AtomicBoolean();

  /** Takes blocks, already ended here, that leave the one-sided path, with why. */
  @FunctionalInterface
  interface Leave {
    void leave(List<Wanted> blocks, FallbackCause cause, String reason);
  }

  /**
   * Blocks ended so far, by identity: each {@link Wanted} of a request is its own block, even where
   * two are equal as values.
   */
  private final Set<Wanted> ended =
      Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));

  BlockEnds(BlockFetchingListener listener, boolean toDisk, ReadMetrics metrics, Leave leave) {
    this.listener = listener;
    this.toDisk = toDisk;
    this.metrics = metrics;
    this.leave = leave;
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
    metrics.delivered(w.batch(), bytes, toDisk);
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

  /** Ends the blocks of {@code ws} not ended yet by handing them to {@link Leave}, with why. */
  void fallback(List<Wanted> ws, FallbackCause cause, String reason) {
    List<Wanted> claimed = new ArrayList<>();
    for (Wanted w : ws) {
      if (claim(w)) {
        claimed.add(w);
      }
    }
    if (!claimed.isEmpty()) {
      leave.leave(claimed, cause, reason);
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
