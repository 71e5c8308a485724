package io.memwire.transfer;

import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A snapshot of a node's counters, keyed by the declared {@link TransportMetrics}: what it read,
 * what failed and why, and what it holds (regions, mappings, pool buffers, connections). After
 * {@link TransferNode#close()} every "held" figure is zero unless a caller leaked a buffer.
 */
public final class TransferStats {
  private final Map<Metric, Long> values;
  private final Map<String, Long> byName;

  TransferStats(Map<Metric, Long> values) {
    this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
    Map<String, Long> names = new LinkedHashMap<>();
    values.forEach((m, v) -> names.put(m.name(), v));
    this.byName = Collections.unmodifiableMap(names);
  }

  /** The value of {@code metric}; 0 when this node's provider does not report it. */
  public long get(Metric metric) {
    return values.getOrDefault(metric, 0L);
  }

  /** Requests completed successfully. */
  public long readsCompleted() {
    return get(TransportMetrics.READS_COMPLETED);
  }

  /** Bytes delivered by successful requests. */
  public long bytesRead() {
    return get(TransportMetrics.BYTES_READ);
  }

  public long remoteAccessErrors() {
    return get(TransportMetrics.REMOTE_ACCESS_ERRORS);
  }

  public long connectionErrors() {
    return get(TransportMetrics.CONNECTION_ERRORS);
  }

  public long timeouts() {
    return get(TransportMetrics.TIMEOUTS);
  }

  /** Requests posted and not yet ended. */
  public long outstandingRequests() {
    return get(TransportMetrics.OUTSTANDING_REQUESTS);
  }

  public long registeredRegions() {
    return get(TransportMetrics.REGISTERED_REGIONS);
  }

  /** Bytes registered for regions and pool memory, counted against the registration budget. */
  public long registeredBytes() {
    return get(TransportMetrics.REGISTERED_BYTES);
  }

  /** File mappings not yet unmapped. */
  public long mappedSegments() {
    return get(TransportMetrics.MAPPED_SEGMENTS);
  }

  public long mappedBytes() {
    return get(TransportMetrics.MAPPED_BYTES);
  }

  public long poolBuffersOutstanding() {
    return get(TransportMetrics.POOL_BUFFERS_OUTSTANDING);
  }

  public long poolBytesOutstanding() {
    return get(TransportMetrics.POOL_BYTES_OUTSTANDING);
  }

  /** Bytes of registered-memory units live now, over every allocator of the node. */
  public long memoryBytes() {
    return get(TransportMetrics.MEMORY_BYTES);
  }

  /** Most registered-memory unit bytes live at once since the node started. */
  public long memoryPeakBytes() {
    return get(TransportMetrics.MEMORY_PEAK_BYTES);
  }

  /** Bytes of live units of the node's child allocator {@code child} (0 when none is open). */
  public long memoryBytes(String child) {
    return get(TransportMetrics.MEMORY_CHILD_BYTES.of(child));
  }

  /** Peak unit bytes of the child allocator {@code child} (0 when none is open). */
  public long memoryPeakBytes(String child) {
    return get(TransportMetrics.MEMORY_CHILD_PEAK_BYTES.of(child));
  }

  /** Outgoing connections cached and open now. */
  public long openConnections() {
    return get(TransportMetrics.OPEN_CONNECTIONS);
  }

  /** Outgoing connections closed because they stayed idle past connectionIdleTimeout. */
  public long connectionsReaped() {
    return get(TransportMetrics.CONNECTIONS_REAPED);
  }

  /**
   * Reads this node served to peers (tcp responder; verbs reads bypass the CPU and are not
   * counted).
   */
  public long servedReads() {
    return get(TransportMetrics.SERVED_READS);
  }

  /** Bytes this node served to peers (tcp only). */
  public long servedBytes() {
    return get(TransportMetrics.SERVED_BYTES);
  }

  /** Requests this node refused (tcp only). */
  public long servedErrors() {
    return get(TransportMetrics.SERVED_ERRORS);
  }

  /** Every counter by metric, including provider-specific ones, in the order reported. */
  public Map<Metric, Long> byMetric() {
    return values;
  }

  /** Every counter by name, including provider-specific ones. */
  public Map<String, Long> asMap() {
    return byName;
  }

  @Override
  public String toString() {
    return "TransferStats" + byName;
  }
}
