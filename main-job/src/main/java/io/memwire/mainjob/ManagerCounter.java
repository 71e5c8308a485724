package io.memwire.mainjob;

import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.function.Supplier;

/**
 * The shuffle manager's counters the main job reads, each named by its declaration in
 * shuffle-manager's {@link ShuffleMetrics}. A name is looked up only where there are counters to
 * read: Spark's own manager runs without Memwire's jar, and then no class of it is loaded.
 */
enum ManagerCounter {
  RDMA_BYTES(() -> ShuffleMetrics.RDMA_BYTES.name()),
  RDMA_BLOCKS(() -> ShuffleMetrics.RDMA_BLOCKS.name()),
  FALLBACK_BLOCKS(() -> ShuffleMetrics.FALLBACK_BLOCKS.name()),
  FAILED_BLOCKS(() -> ShuffleMetrics.FAILED_BLOCKS.name()),
  OUTPUTS_PUBLISHED(() -> ShuffleMetrics.OUTPUTS_PUBLISHED.name()),
  PUBLISH_MICROS(() -> ShuffleMetrics.PUBLISH_MICROS.name()),
  SLOT_READS(() -> ShuffleMetrics.SLOT_READS.name()),
  INDEX_READS(() -> ShuffleMetrics.INDEX_READS.name()),
  INDEX_ENTRY_READS(() -> ShuffleMetrics.INDEX_ENTRY_READS.name()),
  INDEX_CACHE_HITS(() -> ShuffleMetrics.INDEX_CACHE_HITS.name()),
  FETCH_REQUESTS(() -> ShuffleMetrics.FETCH_REQUESTS.name()),
  FIRST_BLOCK_MICROS(() -> ShuffleMetrics.FIRST_BLOCK_MICROS.name()),
  /** A level, not a count: a phase keeps its value at the end instead of the difference. */
  OPEN_CONNECTIONS(() -> ShuffleMetrics.node(TransportMetrics.OPEN_CONNECTIONS));

  // A lambda returning a String: creating it loads no Memwire class, calling it does.
  private final Supplier<String> key;

  ManagerCounter(Supplier<String> key) {
    this.key = key;
  }

  /** The key in the manager's stats (loads shuffle-manager's declarations). */
  String key() {
    return key.get();
  }
}
