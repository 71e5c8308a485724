package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.transfer.TransferNode;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every reduce task of this executor shares: the transfer node, read limits, counters, the
 * cache of directory slots already read (per shuffle, dropped when the shuffle is unregistered),
 * the threads that call Spark's fallback client, and which peers were already logged as falling
 * back.
 */
public final class ReadContext implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ReadContext.class);
  private static final AtomicInteger THREAD_IDS = new AtomicInteger();
  /** Cached slots per shuffle before the cache stops growing (about 300 bytes each). */
  static final int MAX_CACHED_SLOTS_PER_SHUFFLE = 100_000;

  final TransferNode node;
  final int readBatchBlocks;
  final long readBatchBytes;
  final boolean fallbackAllowed;
  final ShuffleCounters counters;
  final ExecutorService fallbackThreads;
  private final Map<Integer, Map<SlotKey, DirectorySlot>> slots = new ConcurrentHashMap<>();
  private final Set<String> loggedPeers = ConcurrentHashMap.newKeySet();

  public ReadContext(TransferNode node, int readBatchBlocks, long readBatchBytes,
      boolean fallbackAllowed, ShuffleCounters counters) {
    this.node = node;
    this.readBatchBlocks = readBatchBlocks;
    this.readBatchBytes = readBatchBytes;
    this.fallbackAllowed = fallbackAllowed;
    this.counters = counters;
    this.fallbackThreads = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "memwire-shuffle-fallback-" + THREAD_IDS.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /** Where one slot lives: a directory chunk and a map index. */
  record SlotKey(DirectoryPointer pointer, int mapIndex) {}

  DirectorySlot cachedSlot(int shuffleId, SlotKey key) {
    Map<SlotKey, DirectorySlot> m = slots.get(shuffleId);
    return m == null ? null : m.get(key);
  }

  void cacheSlot(int shuffleId, SlotKey key, DirectorySlot slot) {
    Map<SlotKey, DirectorySlot> m = slots.computeIfAbsent(shuffleId, id -> new ConcurrentHashMap<>());
    if (m.size() < MAX_CACHED_SLOTS_PER_SHUFFLE) {
      m.put(key, slot);
    }
  }

  void dropSlot(int shuffleId, SlotKey key) {
    Map<SlotKey, DirectorySlot> m = slots.get(shuffleId);
    if (m != null) {
      m.remove(key);
    }
  }

  /** Forgets a shuffle's cached slots (it was unregistered). */
  public void forget(int shuffleId) {
    slots.remove(shuffleId);
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
    slots.clear();
  }
}
