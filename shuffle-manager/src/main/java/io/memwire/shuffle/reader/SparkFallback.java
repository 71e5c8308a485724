package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import java.io.IOException;
import java.util.List;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;

/**
 * The one place that decides what becomes of blocks not read one-sided: with {@code
 * spark.shuffle.rdma.fallback} on, they go to Spark's own client (on a {@code
 * memwire-shuffle-fallback-N} thread: it may block connecting), counted under their cause; with it
 * off, they fail at once, on the calling thread, so Spark reports FetchFailed.
 */
final class SparkFallback {
  private final ReadContext ctx;
  private final BlockStoreClient spark;

  /**
   * @param spark Spark's own client ({@code blockManager.blockStoreClient})
   */
  SparkFallback(ReadContext ctx, BlockStoreClient spark) {
    this.ctx = ctx;
    this.spark = spark;
  }

  /**
   * Hands {@code ids} of {@code peer} to Spark's client (or fails them); {@code log}: log the
   * peer's first fallback at WARN.
   */
  void handOver(
      Peer peer,
      List<String> ids,
      BlockFetchingListener listener,
      DownloadFileManager toDisk,
      FallbackCause cause,
      String reason,
      boolean log) {
    if (!ctx.fallbackAllowed) {
      IOException e =
          new IOException(
              "blocks of executor "
                  + peer.execId()
                  + " cannot be read one-sided ("
                  + reason
                  + ") and spark.shuffle.rdma.fallback=false");
      ctx.metrics.failed(ids.size());
      for (String id : ids) {
        listener.onBlockFetchFailure(id, e);
      }
      return;
    }
    if (log) {
      ctx.logFallback(peer.toString(), reason);
    }
    ctx.metrics.fallback(cause, ids.size());
    String[] array = ids.toArray(new String[0]);
    try {
      ctx.fallbackThreads.execute(
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
}
