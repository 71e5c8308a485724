package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What this executor knows of peers' map outputs, shared by its reduce tasks: their directory slots
 * and, within a byte budget, their whole index files; per shuffle, dropped when the shuffle is
 * unregistered. Also the whole-index reads under way, so concurrent tasks read an index once.
 *
 * <p>Index files are immutable once Spark commits a map output, and a recomputed output has a new
 * map id, so an entry cached under (route, map id) never goes stale; a read that fails drops it.
 * Thread-safe.
 */
final class MapOutputCache {
  /** Cached slots per shuffle before the cache stops growing (about 300 bytes each). */
  static final int MAX_CACHED_SLOTS_PER_SHUFFLE = 100_000;

  /**
   * Largest index file read and kept whole (8191 reduce partitions); larger ones are read by entry.
   */
  static final int MAX_CACHED_INDEX_BYTES = 64 * 1024;

  private final long indexCacheBudget;
  private final AtomicLong indexCacheBytes = new AtomicLong();
  private final Map<Integer, Map<Route, MapOutput>> outputs = new ConcurrentHashMap<>();

  /** Whole-index reads under way, so concurrent tasks of this executor share one. */
  private final Map<LoadKey, CompletableFuture<MapOutput>> loading = new ConcurrentHashMap<>();

  /** One map output's whole-index read: which shuffle, slot and map id. */
  private record LoadKey(int shuffleId, Route key, long mapId) {}

  /**
   * @param indexCacheBudget bytes of peers' index files kept (0: none; every fetch reads entries)
   */
  MapOutputCache(long indexCacheBudget) {
    this.indexCacheBudget = indexCacheBudget;
  }

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

  /**
   * Keeps a map output's whole index, within the budget, with {@code slot} (whose checksums, when
   * read from its metadata region with the index, are kept and counted too).
   */
  void cacheIndex(int shuffleId, Route key, DirectorySlot slot, long[] offsets) {
    long bytes = bytes(new MapOutput(slot, offsets));
    Map<Route, MapOutput> m = outputs.computeIfAbsent(shuffleId, id -> new ConcurrentHashMap<>());
    m.compute(
        key,
        (k, old) -> {
          if (old != null && old.slot().mapId() == slot.mapId() && old.offsets() != null) {
            return old;
          }
          long freed = old != null && old.offsets() != null ? bytes(old) : 0;
          if (indexCacheBytes.addAndGet(bytes - freed) > indexCacheBudget) {
            indexCacheBytes.addAndGet(freed - bytes);
            return old;
          }
          return new MapOutput(slot, offsets);
        });
  }

  private MapOutput replaced(MapOutput old, MapOutput now) {
    if (old != null && old.offsets() != null) {
      indexCacheBytes.addAndGet(-bytes(old));
    }
    return now;
  }

  /** Bytes a cached index takes: its offsets and the checksums kept with it. */
  private static long bytes(MapOutput o) {
    OutputChecksums sums = o.slot().checksums();
    return o.offsets().length * 8L + (sums == null ? 0 : sums.values().length * 8L);
  }

  /**
   * Claims the load of a map output's whole index, so concurrent tasks of this executor read it
   * once: returns null when {@code mine} was registered (the caller reads the index and then calls
   * {@link #indexLoaded}), else the future of the load already under way.
   */
  CompletableFuture<MapOutput> joinIndexLoad(
      int shuffleId, Route key, long mapId, CompletableFuture<MapOutput> mine) {
    return loading.putIfAbsent(new LoadKey(shuffleId, key, mapId), mine);
  }

  /**
   * Ends a load claimed with {@link #joinIndexLoad} (idempotent): caches what was loaded ({@code
   * loaded}: the slot, with the checksums read with the index, and the offsets; null when the load
   * failed with {@code error}) and completes the future waiting tasks hold.
   */
  void indexLoaded(
      int shuffleId,
      Route key,
      DirectorySlot slot,
      CompletableFuture<MapOutput> mine,
      MapOutput loaded,
      Throwable error) {
    if (loaded != null) {
      cacheIndex(shuffleId, key, loaded.slot(), loaded.offsets());
    }
    loading.remove(new LoadKey(shuffleId, key, slot.mapId()), mine);
    if (loaded != null) {
      mine.complete(loaded);
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
  void forget(int shuffleId) {
    Map<Route, MapOutput> m = outputs.remove(shuffleId);
    if (m != null) {
      m.keySet().forEach(k -> m.computeIfPresent(k, (kk, old) -> replaced(old, null)));
    }
  }

  /** Forgets every shuffle. */
  void clear() {
    List.copyOf(outputs.keySet()).forEach(this::forget);
  }

  /** Bytes of index entries cached now. */
  long indexCacheBytes() {
    return indexCacheBytes.get();
  }
}
