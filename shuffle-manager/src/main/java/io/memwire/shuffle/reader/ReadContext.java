package io.memwire.shuffle.reader;

import io.memwire.shuffle.PeerReadLatencies;
import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.compat.SparkCompat;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.transfer.TransferNode;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkEnv;
import org.apache.spark.network.util.TransportConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every reduce task of this executor shares: the transfer node, read limits, counters, what is
 * known of peers' map outputs (their directory slots and, within a byte budget, their whole index
 * files; per shuffle, dropped when the shuffle is unregistered), the threads that call Spark's
 * fallback client, and which peers were already logged as falling back.
 *
 * <p>Index files are immutable once Spark commits a map output, and a recomputed output has a new
 * map id, so an entry cached under (slot, map id) never goes stale; a read that fails drops it.
 */
public final class ReadContext implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ReadContext.class);
  private static final AtomicInteger THREAD_IDS = new AtomicInteger();

  /** Cached slots per shuffle before the cache stops growing (about 300 bytes each). */
  static final int MAX_CACHED_SLOTS_PER_SHUFFLE = 100_000;

  /**
   * Largest index file read and kept whole (8191 reduce partitions); larger ones are read by entry.
   */
  static final int MAX_CACHED_INDEX_BYTES = 64 * 1024;

  /** The transfer node, or null when every block goes to Spark ({@link #delegateAll}). */
  final TransferNode node;

  /** When non-null, every block goes to Spark's own client for this cause; nothing is read here. */
  final ShuffleCounters.FallbackCause delegateAll;

  final PeerReadLatencies latencies;
  final int readBatchBlocks;
  final long readBatchBytes;
  final boolean fallbackAllowed;
  final ShuffleCounters counters;

  /** Every counter update of the read path goes through here. */
  final ReadMetrics metrics;

  final ExecutorService fallbackThreads;
  private final long indexCacheBudget;
  private volatile TransportConf transportConf;
  private final AtomicLong indexCacheBytes = new AtomicLong();
  private final Map<Integer, Map<Route, MapOutput>> outputs = new ConcurrentHashMap<>();

  /** Whole-index reads under way, so concurrent tasks of this executor share one. */
  private final Map<LoadKey, CompletableFuture<long[]>> loading = new ConcurrentHashMap<>();

  private final Set<String> loggedPeers = ConcurrentHashMap.newKeySet();

  /** Test seam: data reads whose bytes are flipped before verification, as a transfer fault. */
  private final AtomicInteger transportFaults = new AtomicInteger();

  /** Service mode with a resolve port: how dead pointers are re-resolved; else null. */
  private volatile PointerResolution resolution;

  /**
   * @param indexCacheBudget bytes of peers' index files kept (0: none; every fetch reads entries)
   */
  public ReadContext(
      TransferNode node,
      int readBatchBlocks,
      long readBatchBytes,
      boolean fallbackAllowed,
      long indexCacheBudget,
      ShuffleCounters counters,
      PeerReadLatencies latencies) {
    this(
        node,
        null,
        readBatchBlocks,
        readBatchBytes,
        fallbackAllowed,
        indexCacheBudget,
        counters,
        latencies);
  }

  /** As above, with latencies kept by this context alone. */
  public ReadContext(
      TransferNode node,
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
        new PeerReadLatencies());
  }

  /**
   * A context that reads nothing one-sided: every block of every task goes to Spark's own client,
   * counted as a fallback for {@code cause} (no transfer node needed).
   */
  public static ReadContext delegating(
      ShuffleCounters.FallbackCause cause, ShuffleCounters counters) {
    return new ReadContext(null, cause, 1, 1, true, 0, counters, new PeerReadLatencies());
  }

  private ReadContext(
      TransferNode node,
      ShuffleCounters.FallbackCause delegateAll,
      int readBatchBlocks,
      long readBatchBytes,
      boolean fallbackAllowed,
      long indexCacheBudget,
      ShuffleCounters counters,
      PeerReadLatencies latencies) {
    this.node = node;
    this.delegateAll = delegateAll;
    this.latencies = latencies;
    this.readBatchBlocks = readBatchBlocks;
    this.readBatchBytes = readBatchBytes;
    this.fallbackAllowed = fallbackAllowed;
    this.indexCacheBudget = indexCacheBudget;
    this.counters = counters;
    this.metrics = new ReadMetrics(counters, latencies);
    this.fallbackThreads =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "memwire-shuffle-fallback-" + THREAD_IDS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /** One map output's whole-index read: which shuffle, slot and map id. */
  private record LoadKey(int shuffleId, Route key, long mapId) {}

  /** The cached entry of a map output, or null when it is not cached under this map id. */
  MapOutput cached(int shuffleId, Route key, long mapId) {
    Map<Route, MapOutput> m = outputs.get(shuffleId);
    MapOutput o = m == null ? null : m.get(key);
    return o != null && o.slot().mapId() == mapId ? o : null;
  }

  void cacheSlot(int shuffleId, Route key, DirectorySlot slot) {
    Map<Route, MapOutput> m = outputs.computeIfAbsent(shuffleId, id -> new ConcurrentHashMap<>());
    if (m.size() < MAX_CACHED_SLOTS_PER_SHUFFLE) {
      m.compute(
          key,
          (k, old) ->
              old != null && old.slot().mapId() == slot.mapId()
                  ? old
                  : replaced(old, new MapOutput(slot, null)));
    }
  }

  /** True when an index of {@code bytes} should be read whole: small enough and room left. */
  boolean wantsWholeIndex(long bytes) {
    return bytes <= MAX_CACHED_INDEX_BYTES && indexCacheBytes.get() + bytes <= indexCacheBudget;
  }

  /** Keeps a map output's whole index, within the budget. */
  void cacheIndex(int shuffleId, Route key, DirectorySlot slot, long[] offsets) {
    long bytes = offsets.length * 8L;
    Map<Route, MapOutput> m = outputs.computeIfAbsent(shuffleId, id -> new ConcurrentHashMap<>());
    m.compute(
        key,
        (k, old) -> {
          if (old != null && old.slot().mapId() == slot.mapId() && old.offsets() != null) {
            return old;
          }
          long freed = old != null && old.offsets() != null ? old.offsets().length * 8L : 0;
          if (indexCacheBytes.addAndGet(bytes - freed) > indexCacheBudget) {
            indexCacheBytes.addAndGet(freed - bytes);
            return old;
          }
          return new MapOutput(slot, offsets);
        });
  }

  private MapOutput replaced(MapOutput old, MapOutput now) {
    if (old != null && old.offsets() != null) {
      indexCacheBytes.addAndGet(-old.offsets().length * 8L);
    }
    return now;
  }

  /**
   * Claims the load of a map output's whole index, so concurrent tasks of this executor read it
   * once: returns null when {@code mine} was registered (the caller reads the index and then calls
   * {@link #indexLoaded}), else the future of the load already under way.
   */
  CompletableFuture<long[]> joinIndexLoad(
      int shuffleId, Route key, long mapId, CompletableFuture<long[]> mine) {
    return loading.putIfAbsent(new LoadKey(shuffleId, key, mapId), mine);
  }

  /**
   * Ends a load claimed with {@link #joinIndexLoad} (idempotent): caches the offsets (null when the
   * load failed with {@code error}) and completes the future waiting tasks hold.
   */
  void indexLoaded(
      int shuffleId,
      Route key,
      DirectorySlot slot,
      CompletableFuture<long[]> mine,
      long[] offsets,
      Throwable error) {
    if (offsets != null) {
      cacheIndex(shuffleId, key, slot, offsets);
    }
    loading.remove(new LoadKey(shuffleId, key, slot.mapId()), mine);
    if (offsets != null) {
      mine.complete(offsets);
    } else {
      mine.completeExceptionally(error);
    }
  }

  /** Forgets one map output (its slot was stale or a read from it failed). */
  void drop(int shuffleId, Route key) {
    Map<Route, MapOutput> m = outputs.get(shuffleId);
    if (m != null) {
      m.computeIfPresent(key, (k, old) -> replaced(old, null));
    }
  }

  /** Forgets what is known of a shuffle's map outputs (it was unregistered). */
  public void forget(int shuffleId) {
    Map<Route, MapOutput> m = outputs.remove(shuffleId);
    if (m != null) {
      m.keySet().forEach(k -> m.computeIfPresent(k, (kk, old) -> replaced(old, null)));
    }
  }

  /** Bytes of index entries cached now (for tests and stats). */
  public long indexCacheBytes() {
    return indexCacheBytes.get();
  }

  /**
   * Test seam: flips one byte of each of the next {@code reads} data reads of verified blocks as
   * they arrive, before the check, as a fault on the transfer would (the stored bytes stay right).
   */
  public void injectTransportFaults(int reads) {
    transportFaults.set(reads);
  }

  /** Applies an injected transfer fault to a data read's bytes, if one is due. */
  void transportFault(ByteBuffer bytes) {
    if (transportFaults.get() > 0
        && bytes.hasRemaining()
        && transportFaults.getAndDecrement() > 0) {
      int at = bytes.position();
      bytes.put(at, (byte) ~bytes.get(at));
    }
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

  /** Logs the first fallback for a peer at WARN, later ones at DEBUG. */
  void logFallback(String peer, String reason) {
    if (loggedPeers.add(peer)) {
      LOG.warn("reading blocks of executor {} through Spark's own transfer: {}", peer, reason);
    } else {
      LOG.debug("fallback for executor {}: {}", peer, reason);
    }
  }

  @Override
  public void close() {
    fallbackThreads.shutdownNow();
    List.copyOf(outputs.keySet()).forEach(this::forget);
  }
}
