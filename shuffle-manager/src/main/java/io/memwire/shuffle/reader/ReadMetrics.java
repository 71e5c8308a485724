package io.memwire.shuffle.reader;

import io.memwire.shuffle.PeerReadLatencies;
import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.ShuffleCounters.FallbackCause;

/**
 * Every counter the read path updates, in one place: what the stages read (slots, indexes, cache
 * hits) and how blocks ended (one-sided, failed, handed to Spark's client), plus each peer's read
 * latencies. Thread-safe (the counters are adders).
 */
final class ReadMetrics {
  private final ShuffleCounters counters;
  private final PeerReadLatencies latencies;

  ReadMetrics(ShuffleCounters counters, PeerReadLatencies latencies) {
    this.counters = counters;
    this.latencies = latencies;
  }

  /** One batch of slot or index reads was posted to a peer (one metadata round trip). */
  void metadataBatch() {
    counters.metadataReads.increment();
  }

  void slotsRead(int slots) {
    counters.slotReads.add(slots);
  }

  void reresolved(boolean ok) {
    (ok ? counters.pointersReresolved : counters.reresolveFailures).increment();
  }

  void staleSlot() {
    counters.staleSlots.increment();
  }

  void wholeIndexRead() {
    counters.indexReads.increment();
  }

  void indexEntriesRead() {
    counters.indexEntryReads.increment();
  }

  void indexCacheHits(int blocks) {
    counters.indexCacheHits.add(blocks);
  }

  /** A read posted to {@code execId} ended well after {@code micros}. */
  void readLatency(String execId, long micros) {
    latencies.record(execId, micros);
  }

  /** A fetch request delivered its first block {@code micros} after it started. */
  void firstBlock(long micros) {
    counters.fetchRequests.increment();
    counters.firstBlockMicros.add(micros);
  }

  /**
   * A block of {@code bytes} read one-sided was handed to Spark (into a temp file when {@code
   * toDisk}); counted also in its size bucket.
   */
  void delivered(boolean batch, long bytes, boolean toDisk) {
    if (toDisk) {
      counters.rdmaBlocksToDisk.increment();
    }
    counters.rdmaBlocks.increment();
    if (batch) {
      counters.rdmaBatchBlocks.increment();
    }
    counters.rdmaBytes.add(bytes);
    counters.blockSize(bytes);
  }

  /** A block's bytes matched every stored checksum of its partitions. */
  void verified() {
    counters.checksumVerifiedBlocks.increment();
  }

  /** A block was read without a stored checksum to check. */
  void unverified() {
    counters.checksumUnverifiedBlocks.increment();
  }

  /**
   * A block's first read did not match its checksum: {@code disk} when the re-read did not either.
   */
  void checksumMismatch(boolean disk) {
    (disk ? counters.checksumMismatchesDisk : counters.checksumMismatchesNetwork).increment();
  }

  void failed(int blocks) {
    counters.failedBlocks.add(blocks);
  }

  void fallback(FallbackCause cause, int blocks) {
    counters.fallback(cause, blocks);
  }
}
