package io.memwire.shuffle.metrics;

import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The fixed set of Memwire metrics of one JVM, by name, read from its {@link RdmaShuffleManager}
 * and transfer node. Counters only grow; gauges ({@code registration.*}, {@code bufferPool.*},
 * {@code connections.open}, {@code reads.outstanding}, {@code transport.active}) go up and down.
 * All are zero where no Memwire manager runs.
 */
public final class MemwireMetrics {
  /** Every name, in documentation order. */
  public static final List<String> NAMES;

  /** metric name -> key of {@link RdmaShuffleManager#stats()}. */
  private static final Map<String, String> SOURCES;

  static {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("oneSided.blocks", "rdmaBlocks");
    m.put("oneSided.batchBlocks", "rdmaBatchBlocks");
    m.put("oneSided.blocksToDisk", "rdmaBlocksToDisk");
    m.put("oneSided.bytes", "rdmaBytes");
    m.put("oneSided.fetchRequests", "fetchRequests");
    m.put("fallback.blocks", "fallbackBlocks");
    for (FallbackCause c : FallbackCause.values()) {
      m.put("fallback.blocks." + c.metricName(), "fallbackBlocks." + c.metricName());
    }
    m.put("failedBlocks", "failedBlocks");
    m.put("outputs.published", "outputsPublished");
    m.put("outputs.toService", "outputsToService");
    m.put("outputs.serviceErrors", "serviceErrors");
    m.put("outputs.servedByFallback", "outputsServedByFallback");
    m.put("outputs.migrated", "outputsMigrated");
    m.put("outputs.migratedNotRepointed", "migratedNotRepointed");
    m.put("directory.slotReads", "slotReads");
    m.put("index.reads", "indexReads");
    m.put("index.entryReads", "indexEntryReads");
    m.put("indexCache.hits", "indexCacheHits");
    m.put("staleSlots", "staleSlots");
    m.put("registration.bytes", "node.registeredBytes");
    m.put("registration.budget", null);
    m.put("registration.regions", "node.registeredRegions");
    m.put("bufferPool.bytes", "node.poolSlabBytes");
    m.put("bufferPool.bytesLent", "node.poolBytesOutstanding");
    m.put("connections.open", "node.openConnections");
    m.put("connections.reaped", "node.connectionsReaped");
    m.put("reads.completed", "node.readsCompleted");
    m.put("reads.bytes", "node.bytesRead");
    m.put("reads.outstanding", "node.outstandingRequests");
    m.put("served.reads", "node.servedReads");
    m.put("served.bytes", "node.servedBytes");
    m.put("transport.errors.remoteAccess", "node.remoteAccessErrors");
    m.put("transport.errors.connection", "node.connectionErrors");
    m.put("transport.errors.timeout", "node.timeouts");
    m.put("transport.errors.served", "node.servedErrors");
    m.put("transport.active", "transportActive");
    SOURCES = Collections.unmodifiableMap(m);
    NAMES = Collections.unmodifiableList(new ArrayList<>(m.keySet()));
  }

  private MemwireMetrics() {}

  /** Every metric of this JVM now (zeros when no Memwire manager runs here). */
  public static Map<String, Long> snapshot() {
    RdmaShuffleManager manager = RdmaShuffleManager.current();
    Map<String, Long> stats = manager == null ? Map.of() : manager.stats();
    Map<String, Long> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : SOURCES.entrySet()) {
      long v;
      if (e.getValue() != null) {
        v = stats.getOrDefault(e.getValue(), 0L);
      } else {
        v =
            manager != null && manager.isTransportActive()
                ? manager.shuffleConf().transfer(null).registrationBudget()
                : 0L;
      }
      out.put(e.getKey(), v);
    }
    return out;
  }

  /** Sums per-executor maps name by name (names absent from a map count as zero). */
  public static Map<String, Long> sum(Iterable<Map<String, Long>> perExecutor) {
    Map<String, Long> total = new LinkedHashMap<>();
    NAMES.forEach(n -> total.put(n, 0L));
    for (Map<String, Long> m : perExecutor) {
      m.forEach((k, v) -> total.merge(k, v, Long::sum));
    }
    return total;
  }
}
