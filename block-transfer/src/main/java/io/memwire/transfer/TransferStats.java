package io.memwire.transfer;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A snapshot of a node's counters: what it read, what failed and why, and what it holds (regions,
 * mappings, pool buffers, connections). After {@link TransferNode#close()} every "held" figure is
 * zero unless a caller leaked a buffer.
 */
public final class TransferStats {
  private final Map<String, Long> values;

  TransferStats(Map<String, Long> values) {
    this.values = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(values));
  }

  /** Requests completed successfully. */
  public long readsCompleted() {
    return values.get("readsCompleted");
  }

  /** Bytes delivered by successful requests. */
  public long bytesRead() {
    return values.get("bytesRead");
  }

  public long remoteAccessErrors() {
    return values.get("remoteAccessErrors");
  }

  public long connectionErrors() {
    return values.get("connectionErrors");
  }

  public long timeouts() {
    return values.get("timeouts");
  }

  /** Requests posted and not yet ended. */
  public long outstandingRequests() {
    return values.get("outstandingRequests");
  }

  public long registeredRegions() {
    return values.get("registeredRegions");
  }

  /** Bytes registered for regions and pool memory, counted against the registration budget. */
  public long registeredBytes() {
    return values.get("registeredBytes");
  }

  /** File mappings not yet unmapped. */
  public long mappedSegments() {
    return values.get("mappedSegments");
  }

  public long mappedBytes() {
    return values.get("mappedBytes");
  }

  public long poolBuffersOutstanding() {
    return values.get("poolBuffersOutstanding");
  }

  public long poolBytesOutstanding() {
    return values.get("poolBytesOutstanding");
  }

  /** Bytes of registered-memory units live now, over every allocator of the node. */
  public long memoryBytes() {
    return values.get("memoryBytes");
  }

  /** Most registered-memory unit bytes live at once since the node started. */
  public long memoryPeakBytes() {
    return values.get("memoryPeakBytes");
  }

  /** Bytes of live units of the node's child allocator {@code child} (0 when none is open). */
  public long memoryBytes(String child) {
    return values.getOrDefault("memory." + child + ".bytes", 0L);
  }

  /** Peak unit bytes of the child allocator {@code child} (0 when none is open). */
  public long memoryPeakBytes(String child) {
    return values.getOrDefault("memory." + child + ".peakBytes", 0L);
  }

  /** Outgoing connections cached and open now. */
  public long openConnections() {
    return values.get("openConnections");
  }

  /** Outgoing connections closed because they stayed idle past connectionIdleTimeout. */
  public long connectionsReaped() {
    return values.get("connectionsReaped");
  }

  /**
   * Reads this node served to peers (tcp responder; verbs reads bypass the CPU and are not
   * counted).
   */
  public long servedReads() {
    return values.getOrDefault("servedReads", 0L);
  }

  /** Bytes this node served to peers (tcp only). */
  public long servedBytes() {
    return values.getOrDefault("servedBytes", 0L);
  }

  /** Requests this node refused (tcp only). */
  public long servedErrors() {
    return values.getOrDefault("servedErrors", 0L);
  }

  /** Every counter by name, including provider-specific ones. */
  public Map<String, Long> asMap() {
    return values;
  }

  @Override
  public String toString() {
    return "TransferStats" + values;
  }
}
