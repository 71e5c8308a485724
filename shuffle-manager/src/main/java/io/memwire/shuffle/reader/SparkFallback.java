package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import java.io.IOException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spark's own path for blocks not read one-sided: with {@code spark.shuffle.rdma.fallback} on, they
 * go to Spark's own client (on a {@code memwire-shuffle-fallback-N} thread: it may block
 * connecting), counted under their cause; with it off, they fail at once, on the calling thread, so
 * Spark reports FetchFailed. Called only from {@link FetchRun#toSpark}, where a fetch request's
 * blocks are sent here. One per executor; thread-safe.
 */
final class SparkFallback {
  private static final Logger LOG = LoggerFactory.getLogger(SparkFallback.class);

  private final boolean allowed;
  private final Executor threads;
  private final ReadMetrics metrics;

  /** Peers already logged as falling back (the first time at WARN). */
  private final Set<String> loggedPeers = ConcurrentHashMap.newKeySet();

  /**
   * @param allowed {@code spark.shuffle.rdma.fallback}
   * @param threads where Spark's client is called
   */
  SparkFallback(boolean allowed, Executor threads, ReadMetrics metrics) {
    this.allowed = allowed;
    this.threads = threads;
    this.metrics = metrics;
  }

  /**
   * Hands {@code ids} of {@code peer} to {@code spark}, Spark's own client (or fails them); {@code
   * log}: log the peer's first fallback at WARN.
   */
  void handOver(
      BlockStoreClient spark,
      Peer peer,
      List<String> ids,
      BlockFetchingListener listener,
      DownloadFileManager toDisk,
      FallbackCause cause,
      String reason,
      boolean log) {
    if (!allowed) {
      IOException e =
          new IOException(
              "blocks of executor "
                  + peer.execId()
                  + " cannot be read one-sided ("
                  + reason
                  + ") and spark.shuffle.rdma.fallback=false");
      metrics.failed(ids.size());
      for (String id : ids) {
        listener.onBlockFetchFailure(id, e);
      }
      return;
    }
    if (log) {
      logFallback(peer.toString(), reason);
    }
    metrics.fallback(cause, ids.size());
    String[] array = ids.toArray(new String[0]);
    try {
      threads.execute(
          () -> {
            try {
              spark.fetchBlocks(peer.host(), peer.port(), peer.execId(), array, listener, toDisk);
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

  /** Logs the first fallback for a peer at WARN, later ones at DEBUG. */
  private void logFallback(String peer, String reason) {
    if (loggedPeers.add(peer)) {
      LOG.warn("reading blocks of executor {} through Spark's own transfer: {}", peer, reason);
    } else {
      LOG.debug("fallback for executor {}: {}", peer, reason);
    }
  }
}
