package io.memwire.shuffle.metrics;

import static io.memwire.transfer.metrics.Metric.Unit.BYTES;

import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.Metrics;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The fixed set of Memwire metrics of one JVM in Spark's metric system, each declared once under
 * its Spark name by referring to what it exports: a {@link ShuffleMetrics} metric of {@link
 * RdmaShuffleManager#stats()}, or a {@link TransportMetrics} metric of the manager's transfer node;
 * the exported one keeps its kind, unit and meaning. {@link MemwireMetricsPlugin} registers {@link
 * #ALL}. All are zero where no Memwire manager runs. docs/METRICS.md shows the table {@link #main}
 * prints.
 */
public final class MemwireMetrics {
  /** The declared metric (families expanded) -> its key in stats(); null: the budget. */
  private static final Map<Metric, String> SOURCES;

  /** The declarations, families as one row, in documentation order. */
  private static final List<Metric> DECLARED;

  /** Every metric, in documentation order (families expanded to their members). */
  public static final List<Metric> ALL;

  /** Every name, in documentation order. */
  public static final List<String> NAMES;

  static {
    Declarations d = new Declarations();
    d.manager("oneSided.blocks", ShuffleMetrics.RDMA_BLOCKS);
    d.manager("oneSided.batchBlocks", ShuffleMetrics.RDMA_BATCH_BLOCKS);
    d.manager("oneSided.blocksToDisk", ShuffleMetrics.RDMA_BLOCKS_TO_DISK);
    d.manager("oneSided.bytes", ShuffleMetrics.RDMA_BYTES);
    d.manager("oneSided.fetchRequests", ShuffleMetrics.FETCH_REQUESTS);
    d.family(
        "oneSided.blockSize.<bucket>.blocks",
        ShuffleMetrics.RDMA_BLOCK_SIZE_BLOCKS,
        ShuffleMetrics.SIZE_BUCKETS);
    d.family(
        "oneSided.blockSize.<bucket>.bytes",
        ShuffleMetrics.RDMA_BLOCK_SIZE_BYTES,
        ShuffleMetrics.SIZE_BUCKETS);
    d.manager("fallback.blocks", ShuffleMetrics.FALLBACK_BLOCKS);
    d.family(
        "fallback.blocks.<cause>",
        ShuffleMetrics.FALLBACK_BLOCKS_BY_CAUSE,
        Arrays.stream(FallbackCause.values()).map(FallbackCause::metricName).toList());
    d.manager("failedBlocks", ShuffleMetrics.FAILED_BLOCKS);
    d.manager("checksum.verifiedBlocks", ShuffleMetrics.CHECKSUM_VERIFIED_BLOCKS);
    d.manager("checksum.unverifiedBlocks", ShuffleMetrics.CHECKSUM_UNVERIFIED_BLOCKS);
    d.manager("checksum.mismatches.network", ShuffleMetrics.CHECKSUM_MISMATCHES_NETWORK);
    d.manager("checksum.mismatches.disk", ShuffleMetrics.CHECKSUM_MISMATCHES_DISK);
    d.manager("outputs.published", ShuffleMetrics.OUTPUTS_PUBLISHED);
    d.manager("outputs.toService", ShuffleMetrics.OUTPUTS_TO_SERVICE);
    d.manager("outputs.serviceErrors", ShuffleMetrics.SERVICE_ERRORS);
    d.manager("outputs.servedByFallback", ShuffleMetrics.OUTPUTS_SERVED_BY_FALLBACK);
    d.manager("outputs.publishMicros", ShuffleMetrics.PUBLISH_MICROS);
    d.manager("outputs.migrated", ShuffleMetrics.OUTPUTS_MIGRATED);
    d.manager("outputs.migratedNotRepointed", ShuffleMetrics.MIGRATED_NOT_REPOINTED);
    d.manager("metadata.reads", ShuffleMetrics.METADATA_READS);
    d.manager("directory.slotReads", ShuffleMetrics.SLOT_READS);
    d.manager("index.reads", ShuffleMetrics.INDEX_READS);
    d.manager("index.entryReads", ShuffleMetrics.INDEX_ENTRY_READS);
    d.manager("indexCache.hits", ShuffleMetrics.INDEX_CACHE_HITS);
    d.manager("indexCache.bytes", ShuffleMetrics.INDEX_CACHE_BYTES);
    d.manager("staleSlots", ShuffleMetrics.STALE_SLOTS);
    d.manager("pointers.reresolved", ShuffleMetrics.POINTERS_RERESOLVED);
    d.manager("pointers.reresolveFailures", ShuffleMetrics.RERESOLVE_FAILURES);
    d.transport("registration.bytes", TransportMetrics.REGISTERED_BYTES);
    d.add(
        Metric.gauge(
            "registration.budget",
            BYTES,
            "The transfer node's registrationBudget while the transport runs, else 0."),
        null);
    d.transport("registration.regions", TransportMetrics.REGISTERED_REGIONS);
    d.transport("bufferPool.bytes", TransportMetrics.POOL_SLAB_BYTES);
    d.transport("bufferPool.bytesLent", TransportMetrics.POOL_BYTES_OUTSTANDING);
    d.transport("connections.open", TransportMetrics.OPEN_CONNECTIONS);
    d.transport("connections.reaped", TransportMetrics.CONNECTIONS_REAPED);
    d.transport("reads.completed", TransportMetrics.READS_COMPLETED);
    d.transport("reads.bytes", TransportMetrics.BYTES_READ);
    d.transport("reads.outstanding", TransportMetrics.OUTSTANDING_REQUESTS);
    d.transport("served.reads", TransportMetrics.SERVED_READS);
    d.transport("served.bytes", TransportMetrics.SERVED_BYTES);
    d.transport("transport.errors.remoteAccess", TransportMetrics.REMOTE_ACCESS_ERRORS);
    d.transport("transport.errors.connection", TransportMetrics.CONNECTION_ERRORS);
    d.transport("transport.errors.timeout", TransportMetrics.TIMEOUTS);
    d.transport("transport.errors.served", TransportMetrics.SERVED_ERRORS);
    d.manager("transport.active", ShuffleMetrics.TRANSPORT_ACTIVE);
    SOURCES = Collections.unmodifiableMap(d.sources);
    DECLARED = List.copyOf(d.declared);
    ALL = List.copyOf(SOURCES.keySet());
    NAMES = ALL.stream().map(Metric::name).toList();
  }

  private MemwireMetrics() {}

  /** Collects the declarations: one row each for the docs, members expanded for the values. */
  private static final class Declarations {
    final Map<Metric, String> sources = new LinkedHashMap<>();
    final List<Metric> declared = new ArrayList<>();

    void add(Metric metric, String statsKey) {
      declared.add(metric);
      sources.put(metric, statsKey);
    }

    /** {@code source}, a metric of the manager's stats, exported as {@code name}. */
    void manager(String name, Metric source) {
      add(renamed(name, source), source.name());
    }

    /** The family {@code source} exported as the family {@code name}, one member per part. */
    void family(String name, Metric source, List<String> parts) {
      Metric exported = renamed(name, source);
      declared.add(exported);
      for (String part : parts) {
        sources.put(exported.of(part), source.of(part).name());
      }
    }

    /** {@code transport} of the manager's transfer node, exported as {@code name}. */
    void transport(String name, Metric transport) {
      add(renamed(name, transport), ShuffleMetrics.node(transport));
    }

    private static Metric renamed(String name, Metric source) {
      return new Metric(name, source.kind(), source.unit(), source.doc());
    }
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

  /** The table of docs/METRICS.md's Spark metrics (a family is one row). */
  public static String table() {
    return Metrics.markdownTable(DECLARED);
  }

  /** Prints the table of docs/METRICS.md, to paste it there after a change. */
  public static void main(String[] args) {
    System.out.print(table());
  }
}
