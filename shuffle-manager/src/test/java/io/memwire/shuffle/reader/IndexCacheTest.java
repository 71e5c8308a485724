package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The executor-wide cache of peers' map outputs and the decoding of whole index files. */
class IndexCacheTest {
  private static final InetSocketAddress PEER = new InetSocketAddress("127.0.0.1", 7000);
  private static final DirectoryPointer POINTER = new DirectoryPointer(0, region(1, 256 * 1024));

  private final MapOutputCache cache = new MapOutputCache(1000);

  @AfterEach
  void close() {
    cache.clear();
  }

  private static RemoteRegion region(long key, long length) {
    return RemoteRegion.of(new RegionDescriptor(ProviderKind.TCP, PEER, key, 4096, length));
  }

  private static DirectorySlot slot(int mapIndex, long mapId, int partitions, long dataLength) {
    return new DirectorySlot(
        mapIndex, mapId, region(10 + mapId, (partitions + 1) * 8L), region(20 + mapId, dataLength));
  }

  private static ByteBuffer index(long... offsets) {
    ByteBuffer b = ByteBuffer.allocate(offsets.length * 8);
    for (long o : offsets) {
      b.putLong(o);
    }
    return b.flip();
  }

  @Test
  void decodesAValidIndexAndRefusesEveryKindOfInvalidOne() {
    assertArrayEquals(new long[] {0, 0, 5, 9}, IndexFile.decode(index(0, 0, 5, 9), 9));
    assertArrayEquals(new long[] {0, 3}, IndexFile.decode(index(0, 3), 100));
    assertNull(IndexFile.decode(index(1, 5), 9), "must start at 0");
    assertNull(IndexFile.decode(index(0, 5, 4), 9), "decreasing");
    assertNull(IndexFile.decode(index(0, 5, 10), 9), "beyond the data file");
    assertNull(IndexFile.decode(index(0), 9), "a single entry");
    assertNull(IndexFile.decode(ByteBuffer.allocate(12), 9), "not whole longs");
    assertNull(IndexFile.decode(index(0, -1), 9), "negative");
  }

  @Test
  void entriesAreFoundOnlyUnderTheirMapId() {
    Route key = new Route(POINTER, 3);
    DirectorySlot s = slot(3, 77, 4, 100);
    cache.cacheSlot(1, key, s);
    assertSame(s, cache.cached(1, key, 77).slot());
    assertNull(cache.cached(1, key, 78), "another map id: a recomputed output");
    assertNull(cache.cached(2, key, 77), "another shuffle");
    assertNull(cache.cached(1, key, 77).offsets(), "slot only, no index yet");

    long[] offsets = {0, 10, 20, 30, 100};
    cache.cacheIndex(1, key, s, offsets);
    assertArrayEquals(offsets, cache.cached(1, key, 77).offsets());
    assertEquals(40, cache.indexCacheBytes());
    // Caching the slot again (another task read it) keeps the index.
    cache.cacheSlot(1, key, s);
    assertNotNull(cache.cached(1, key, 77).offsets());
    assertEquals(40, cache.indexCacheBytes());
  }

  @Test
  void theBudgetBoundsCachedIndexBytesAndEveryWayOutReturnsThem() {
    assertTrue(cache.wantsWholeIndex(1000));
    assertFalse(cache.wantsWholeIndex(1008), "beyond the budget of 1000 bytes");
    Route a = new Route(POINTER, 0);
    Route b = new Route(POINTER, 1);
    Route c = new Route(POINTER, 2);
    cache.cacheIndex(1, a, slot(0, 1, 59, 10), new long[60]); // 480 bytes
    cache.cacheIndex(1, b, slot(1, 2, 59, 10), new long[60]); // 960
    assertFalse(cache.wantsWholeIndex(480));
    cache.cacheIndex(1, c, slot(2, 3, 59, 10), new long[60]); // would be 1440: not kept
    assertEquals(960, cache.indexCacheBytes());
    assertNull(cache.cached(1, c, 3));

    // A recomputed output (new map id) replaces the old entry and its bytes.
    cache.cacheIndex(1, a, slot(0, 9, 9, 10), new long[10]);
    assertEquals(480 + 80, cache.indexCacheBytes());
    assertNull(cache.cached(1, a, 1));
    cache.drop(1, b);
    assertEquals(80, cache.indexCacheBytes());
    assertNull(cache.cached(1, b, 2));

    cache.cacheIndex(2, a, slot(0, 4, 9, 10), new long[10]);
    cache.forget(1);
    assertEquals(80, cache.indexCacheBytes());
    assertNull(cache.cached(1, a, 9));
    cache.clear();
    assertEquals(0, cache.indexCacheBytes());
  }

  @Test
  void aZeroBudgetNeverReadsWholeIndexes() {
    MapOutputCache off = new MapOutputCache(0);
    assertFalse(off.wantsWholeIndex(16));
    Route key = new Route(POINTER, 0);
    off.cacheIndex(1, key, slot(0, 1, 1, 10), new long[] {0, 10});
    assertEquals(0, off.indexCacheBytes());
  }

  @Test
  void indexesAbove64KiBAreReadByEntry() {
    MapOutputCache big = new MapOutputCache(1L << 30);
    assertTrue(big.wantsWholeIndex(64 * 1024));
    assertFalse(big.wantsWholeIndex(64 * 1024 + 8));
  }

  @Test
  void concurrentTasksShareOneWholeIndexLoadAndAFailureReachesThemAll() throws Exception {
    Route key = new Route(POINTER, 5);
    DirectorySlot s = slot(5, 50, 2, 30);
    CompletableFuture<MapOutput> first = new CompletableFuture<>();
    assertNull(cache.joinIndexLoad(1, key, 50, first), "the first task reads the index");
    CompletableFuture<MapOutput> shared =
        cache.joinIndexLoad(1, key, 50, new CompletableFuture<>());
    assertSame(first, shared, "a second task waits for the first one's read");
    assertNull(cache.joinIndexLoad(1, key, 51, new CompletableFuture<>()), "another map id");

    long[] offsets = {0, 10, 30};
    cache.indexLoaded(1, key, s, first, new MapOutput(s, offsets), null);
    assertArrayEquals(offsets, shared.get().offsets());
    assertArrayEquals(offsets, cache.cached(1, key, 50).offsets());

    // A failed load fails its waiters; ending it twice changes nothing, and never ends the load
    // a later task claimed.
    Route other = new Route(POINTER, 6);
    DirectorySlot t = slot(6, 60, 2, 30);
    CompletableFuture<MapOutput> failing = new CompletableFuture<>();
    assertNull(cache.joinIndexLoad(1, other, 60, failing));
    CompletableFuture<MapOutput> waiter =
        cache.joinIndexLoad(1, other, 60, new CompletableFuture<>());
    IOException cause = new IOException("peer gone");
    cache.indexLoaded(1, other, t, failing, null, cause);
    ExecutionException e = assertThrows(ExecutionException.class, waiter::get);
    assertSame(cause, e.getCause());
    assertNull(cache.cached(1, other, 60));
    CompletableFuture<MapOutput> retry = new CompletableFuture<>();
    assertNull(
        cache.joinIndexLoad(1, other, 60, retry), "after a failure the next task reads again");
    cache.indexLoaded(1, other, t, failing, null, cause);
    assertSame(retry, cache.joinIndexLoad(1, other, 60, new CompletableFuture<>()));
    cache.indexLoaded(1, other, t, retry, new MapOutput(t, new long[] {0, 1, 2}), null);
    assertTrue(retry.isDone());
  }
}
