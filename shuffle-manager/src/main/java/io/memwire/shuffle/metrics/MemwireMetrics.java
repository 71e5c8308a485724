package io.memwire.shuffle.metrics;

import static io.memwire.transfer.metrics.Metric.Unit.BYTES;
import static io.memwire.transfer.metrics.Metric.Unit.COUNT;
import static io.memwire.transfer.metrics.Metric.Unit.FLAG;

import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The fixed set of Memwire metrics of one JVM, each declared once as a {@link Metric} (its Spark
 * name, kind, unit and meaning) with where its value is read: a key of {@link
 * RdmaShuffleManager#stats()}, or a transport metric of the manager's transfer node, which lends
 * its kind, unit and meaning. {@link MemwireMetricsPlugin} registers {@link #ALL}. All are zero
 * where no Memwire manager runs.
 */
public final class MemwireMetrics {
  /** Key prefix of the transfer node's counters in {@link RdmaShuffleManager#stats()}. */
  private static final String NODE = "node.";

  /** The declared metric -> its key in {@link RdmaShuffleManager#stats()}; null: the budget. */
  private static final Map<Metric, String> SOURCES;

  /** Every metric, in documentation order. */
  public static final List<Metric> ALL;

  /** Every name, in documentation order. */
  public static final List<String> NAMES;

  static {
    Map<Metric, String> m = new LinkedHashMap<>();
    manager(m, "oneSided.blocks", "rdmaBlocks", "Blocks delivered to Spark by one-sided reads.");
    manager(m, "oneSided.batchBlocks", "rdmaBatchBlocks", "Of those, batch blocks.");
    manager(
        m,
        "oneSided.blocksToDisk",
        "rdmaBlocksToDisk",
        "Of those, blocks Spark wanted on disk (above spark.network.maxRemoteBlockSizeFetchToMem).");
    m.put(
        Metric.counter(
            "oneSided.bytes", BYTES, "Block bytes delivered to Spark by one-sided reads."),
        "rdmaBytes");
    manager(
        m,
        "oneSided.fetchRequests",
        "fetchRequests",
        "Fetch requests (one peer, many blocks) that delivered at least one block one-sided.");
    manager(
        m,
        "fallback.blocks",
        "fallbackBlocks",
        "Blocks read through Spark's own transfer, all causes.");
    Metric byCause =
        Metric.counter(
            "fallback.blocks.<cause>",
            COUNT,
            "Blocks read through Spark's own transfer, by cause.");
    for (FallbackCause c : FallbackCause.values()) {
      m.put(byCause.of(c.metricName()), "fallbackBlocks." + c.metricName());
    }
    manager(m, "failedBlocks", "failedBlocks", "Blocks neither path could read.");
    manager(m, "outputs.published", "outputsPublished", "Map outputs published here.");
    manager(
        m,
        "outputs.toService",
        "outputsToService",
        "Of those, outputs handed to the node's shuffle service.");
    manager(
        m,
        "outputs.serviceErrors",
        "serviceErrors",
        "Outputs the node's shuffle service refused or could not take.");
    manager(
        m,
        "outputs.servedByFallback",
        "outputsServedByFallback",
        "Map outputs left to Spark's own transfer.");
    manager(
        m,
        "outputs.migrated",
        "outputsMigrated",
        "Outputs migrated here by decommissioning and re-pointed.");
    manager(
        m,
        "outputs.migratedNotRepointed",
        "migratedNotRepointed",
        "Outputs migrated here that kept Spark's location without a pointer.");
    manager(
        m,
        "metadata.reads",
        "metadataReads",
        "Batches of slot or index reads posted to peers: round trips before data.");
    manager(m, "directory.slotReads", "slotReads", "Directory slots read from peers.");
    manager(m, "index.reads", "indexReads", "Whole index files read from peers.");
    manager(m, "index.entryReads", "indexEntryReads", "Reads of one block's index entries.");
    manager(m, "indexCache.hits", "indexCacheHits", "Blocks located from an index already kept.");
    manager(m, "staleSlots", "staleSlots", "Slots whose map id did not match: fetch failures.");
    transport(m, "registration.bytes", TransportMetrics.REGISTERED_BYTES);
    m.put(
        Metric.gauge(
            "registration.budget",
            BYTES,
            "The transfer node's registrationBudget while the transport runs, else 0."),
        null);
    transport(m, "registration.regions", TransportMetrics.REGISTERED_REGIONS);
    transport(m, "bufferPool.bytes", TransportMetrics.POOL_SLAB_BYTES);
    transport(m, "bufferPool.bytesLent", TransportMetrics.POOL_BYTES_OUTSTANDING);
    transport(m, "connections.open", TransportMetrics.OPEN_CONNECTIONS);
    transport(m, "connections.reaped", TransportMetrics.CONNECTIONS_REAPED);
    transport(m, "reads.completed", TransportMetrics.READS_COMPLETED);
    transport(m, "reads.bytes", TransportMetrics.BYTES_READ);
    transport(m, "reads.outstanding", TransportMetrics.OUTSTANDING_REQUESTS);
    transport(m, "served.reads", TransportMetrics.SERVED_READS);
    transport(m, "served.bytes", TransportMetrics.SERVED_BYTES);
    transport(m, "transport.errors.remoteAccess", TransportMetrics.REMOTE_ACCESS_ERRORS);
    transport(m, "transport.errors.connection", TransportMetrics.CONNECTION_ERRORS);
    transport(m, "transport.errors.timeout", TransportMetrics.TIMEOUTS);
    transport(m, "transport.errors.served", TransportMetrics.SERVED_ERRORS);
    m.put(
        Metric.gauge("transport.active", FLAG, "Whether this JVM's transfer node runs."),
        "transportActive");
    SOURCES = Collections.unmodifiableMap(m);
    ALL = List.copyOf(m.keySet());
    NAMES = ALL.stream().map(Metric::name).toList();
  }

  private MemwireMetrics() {}

  /** A count read from the manager's own counters. */
  private static void manager(Map<Metric, String> m, String name, String statsKey, String doc) {
    m.put(Metric.counter(name, COUNT, doc), statsKey);
  }

  /** {@code transport} of the manager's transfer node, exported as {@code name}. */
  private static void transport(Map<Metric, String> m, String name, Metric transport) {
    m.put(
        new Metric(name, transport.kind(), transport.unit(), transport.doc()),
        NODE + transport.name());
  }

  /** Every metric of this JVM now (zeros when no Memwire manager runs here). */
  public static Map<String, Long> snapshot() {
    RdmaShuffleManager manager = RdmaShuffleManager.current();
    Map<String, Long> stats = manager == null ? Map.of() : manager.stats();
    Map<String, Long> out = new LinkedHashMap<>();
    for (Map.Entry<Metric, String> e : SOURCES.entrySet()) {
      long v;
      if (e.getValue() != null) {
        v = stats.getOrDefault(e.getValue(), 0L);
      } else {
        v =
            manager != null && manager.isTransportActive()
                ? manager.shuffleConf().transfer(null).registrationBudget()
                : 0L;
      }
      out.put(e.getKey().name(), v);
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
