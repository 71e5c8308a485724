package io.memwire.shuffle.reader;

import io.memwire.shuffle.PeerReadLatencies;
import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.compat.SparkCompat;
import io.memwire.transfer.Connector;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkEnv;
import org.apache.spark.network.util.TransportConf;

/**
 * What the reduce tasks of one executor share, each part with one owner: the transfer node, the
 * read settings, the counters ({@link ReadMetrics}), what is known of peers' map outputs ({@link
 * MapOutputCache}), Spark's own path ({@link SparkFallback}) and the threads it and to-disk writes
 * run on, and, in service mode, how dead pointers are re-resolved ({@link PointerResolution}).
 * Nothing here is decided per task: each reduce task plans its reads with a {@link FetchPlanner}.
 */
public final class ReadServices implements AutoCloseable {
  private static final AtomicInteger THREAD_IDS = new AtomicInteger();

  /**
   * The transfer node's connections, or null when every block goes to Spark ({@link #delegateAll}).
   */
  final Connector node;

  /** When non-null, every block goes to Spark's own client for this cause; nothing is read here. */
  final ShuffleCounters.FallbackCause delegateAll;

  final ReadSettings settings;

  /** Every counter update of the read path goes through here. */
  final ReadMetrics metrics;

  final MapOutputCache cache;
  final SparkFallback fallback;

  /** Sees verified data reads' bytes before their check ({@link ArrivalTap#NONE} but in tests). */
  final ArrivalTap tap;

  /**
   * Spark's client calls, re-resolutions and to-disk writes: {@code memwire-shuffle-fallback-N}.
   */
  final ExecutorService threads;

  private volatile TransportConf transportConf;

  /** Service mode with a resolve port: how dead pointers are re-resolved; else null. */
  private volatile PointerResolution resolution;

  /**
   * @param indexCacheBudget bytes of peers' index files kept (0: none; every fetch reads entries)
   */
  public ReadServices(
      Connector node,
      int readBatchBlocks,
      long readBatchBytes,
      boolean fallbackAllowed,
      long indexCacheBudget,
      ShuffleCounters counters,
      PeerReadLatencies latencies) {
    this(
        node,
        null,
        new ReadSettings(readBatchBlocks, readBatchBytes),
        fallbackAllowed,
        indexCacheBudget,
        new ReadMetrics(counters, latencies),
        ArrivalTap.NONE);
  }

  /** As above, with latencies kept by these services alone. */
  public ReadServices(
      Connector node,
      int readBatchBlocks,
      long readBatchBytes,
      boolean fallbackAllowed,
      long indexCacheBudget,
      ShuffleCounters counters) {
    this(
        node,
        readBatchBlocks,
        readBatchBytes,
        fallbackAllowed,
        indexCacheBudget,
        counters,
        ArrivalTap.NONE);
  }

  /** As above, with {@code tap} seeing verified data reads' bytes before their check. */
  ReadServices(
      Connector node,
      int readBatchBlocks,
      long readBatchBytes,
      boolean fallbackAllowed,
      long indexCacheBudget,
      ShuffleCounters counters,
      ArrivalTap tap) {
    this(
        node,
        null,
        new ReadSettings(readBatchBlocks, readBatchBytes),
        fallbackAllowed,
        indexCacheBudget,
        new ReadMetrics(counters, new PeerReadLatencies()),
        tap);
  }

  /**
   * Services that read nothing one-sided: every block of every task goes to Spark's own client,
   * counted as a fallback for {@code cause} (no transfer node needed).
   */
  public static ReadServices delegating(
      ShuffleCounters.FallbackCause cause, ShuffleCounters counters) {
    return new ReadServices(
        null,
        cause,
        new ReadSettings(1, 1),
        true,
        0,
        new ReadMetrics(counters, new PeerReadLatencies()),
        ArrivalTap.NONE);
  }

  private ReadServices(
      Connector node,
      ShuffleCounters.FallbackCause delegateAll,
      ReadSettings settings,
      boolean fallbackAllowed,
      long indexCacheBudget,
      ReadMetrics metrics,
      ArrivalTap tap) {
    this.node = node;
    this.tap = tap;
    this.delegateAll = delegateAll;
    this.settings = settings;
    this.metrics = metrics;
    this.cache = new MapOutputCache(indexCacheBudget);
    this.threads =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "memwire-shuffle-fallback-" + THREAD_IDS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    this.fallback = new SparkFallback(fallbackAllowed, threads, metrics);
  }

  /** Forgets what is known of a shuffle's map outputs (it was unregistered). */
  public void forget(int shuffleId) {
    cache.forget(shuffleId);
  }

  /** Bytes of index entries cached now ({@code indexCache.bytes} in the manager's stats). */
  public long indexCacheBytes() {
    return cache.indexCacheBytes();
  }

  /** Re-resolves dead service pointers from now on ({@link PointerResolution}). */
  public void resolveWith(PointerResolution r) {
    resolution = r;
  }

  PointerResolution resolution() {
    return resolution;
  }

  /** Spark's shuffle transport settings, for temp files of blocks fetched to disk. */
  TransportConf transportConf() {
    TransportConf c = transportConf;
    if (c == null) {
      c = SparkCompat.shuffleTransportConf(SparkEnv.get().conf());
      transportConf = c;
    }
    return c;
  }

  @Override
  public void close() {
    threads.shutdownNow();
    cache.clear();
  }
}
