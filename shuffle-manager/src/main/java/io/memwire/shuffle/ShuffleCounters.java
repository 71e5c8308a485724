package io.memwire.shuffle;

import io.memwire.transfer.metrics.Metric;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the manager did in this JVM: outputs published, blocks read one-sided, fallbacks. Each adder
 * counts one declared {@link ShuffleMetrics} metric (a family's members: one per fallback cause,
 * one per size bucket); {@link #byMetric()} and {@link #snapshot()} read them all.
 */
public final class ShuffleCounters {
  /** Every adder by its metric, in declaration order (first, so the fields below can add). */
  private final Map<Metric, LongAdder> adders = new LinkedHashMap<>();

  /** Map outputs registered and published in the directory. */
  public final LongAdder outputsPublished = adder(ShuffleMetrics.OUTPUTS_PUBLISHED);

  /** Of those, outputs handed to the node's shuffle service (it serves them from then on). */
  public final LongAdder outputsToService = adder(ShuffleMetrics.OUTPUTS_TO_SERVICE);

  /** Outputs the node's shuffle service refused or could not take (then published here). */
  public final LongAdder serviceErrors = adder(ShuffleMetrics.SERVICE_ERRORS);

  /** Outputs migrated here off a decommissioned executor, published and re-pointed. */
  public final LongAdder outputsMigrated = adder(ShuffleMetrics.OUTPUTS_MIGRATED);

  /** Outputs migrated here that kept Spark's location without a pointer (logged why). */
  public final LongAdder migratedNotRepointed = adder(ShuffleMetrics.MIGRATED_NOT_REPOINTED);

  /** Map outputs left to Spark's own transfer (budget exhausted, registration failed). */
  public final LongAdder outputsServedByFallback = adder(ShuffleMetrics.OUTPUTS_SERVED_BY_FALLBACK);

  /** Microseconds map tasks spent publishing their outputs. */
  public final LongAdder publishMicros = adder(ShuffleMetrics.PUBLISH_MICROS);

  /** Blocks (single or batch) delivered to Spark by one-sided reads. */
  public final LongAdder rdmaBlocks = adder(ShuffleMetrics.RDMA_BLOCKS);

  /** Of those, batch blocks (shuffle_s_m_a_b). */
  public final LongAdder rdmaBatchBlocks = adder(ShuffleMetrics.RDMA_BATCH_BLOCKS);

  /** Of those, blocks Spark wanted on disk (above spark.network.maxRemoteBlockSizeFetchToMem). */
  public final LongAdder rdmaBlocksToDisk = adder(ShuffleMetrics.RDMA_BLOCKS_TO_DISK);

  /** Block data bytes delivered to Spark by one-sided reads (what Spark counts as remote bytes). */
  public final LongAdder rdmaBytes = adder(ShuffleMetrics.RDMA_BYTES);

  /** Blocks delivered one-sided, by {@link ShuffleMetrics#SIZE_BUCKETS}. */
  private final LongAdder[] blocksBySize = family(ShuffleMetrics.RDMA_BLOCK_SIZE_BLOCKS);

  /** Their bytes, by the same buckets. */
  private final LongAdder[] bytesBySize = family(ShuffleMetrics.RDMA_BLOCK_SIZE_BYTES);

  /** Fetch requests (one peer, many blocks) that delivered at least one block one-sided. */
  public final LongAdder fetchRequests = adder(ShuffleMetrics.FETCH_REQUESTS);

  /** Sum over those requests of the microseconds from Spark's call to the first block handed. */
  public final LongAdder firstBlockMicros = adder(ShuffleMetrics.FIRST_BLOCK_MICROS);

  /** Directory slots read from peers (cache misses). */
  public final LongAdder slotReads = adder(ShuffleMetrics.SLOT_READS);

  /** Whole index files read from peers (then kept for later tasks). */
  public final LongAdder indexReads = adder(ShuffleMetrics.INDEX_READS);

  /** Reads of one block's index entries (index too large or the cache full or off). */
  public final LongAdder indexEntryReads = adder(ShuffleMetrics.INDEX_ENTRY_READS);

  /** Blocks located from an index this executor already kept: no index read at all. */
  public final LongAdder indexCacheHits = adder(ShuffleMetrics.INDEX_CACHE_HITS);

  /** Slots whose map id did not match after the re-read: reported as fetch failures. */
  public final LongAdder staleSlots = adder(ShuffleMetrics.STALE_SLOTS);

  /**
   * Batches of metadata reads (directory slots, index files or entries) posted to peers: the round
   * trips a fetch request makes before it can read data.
   */
  public final LongAdder metadataReads = adder(ShuffleMetrics.METADATA_READS);

  /**
   * Directory pointers from before a shuffle service restarted that the service resolved to their
   * new chunk (one request each): their blocks were read again one-sided.
   */
  public final LongAdder pointersReresolved = adder(ShuffleMetrics.POINTERS_RERESOLVED);

  /** Pointers the service could not resolve (refused or not reached): their blocks fell back. */
  public final LongAdder reresolveFailures = adder(ShuffleMetrics.RERESOLVE_FAILURES);

  /** Blocks read one-sided that matched Spark's stored checksums. */
  public final LongAdder checksumVerifiedBlocks = adder(ShuffleMetrics.CHECKSUM_VERIFIED_BLOCKS);

  /** Blocks read one-sided without a stored checksum to check. */
  public final LongAdder checksumUnverifiedBlocks =
      adder(ShuffleMetrics.CHECKSUM_UNVERIFIED_BLOCKS);

  /** Checksum mismatches that a re-read cleared (a transfer fault). */
  public final LongAdder checksumMismatchesNetwork =
      adder(ShuffleMetrics.CHECKSUM_MISMATCHES_NETWORK);

  /** Checksum mismatches on two reads (the stored bytes are wrong): fetch failures. */
  public final LongAdder checksumMismatchesDisk = adder(ShuffleMetrics.CHECKSUM_MISMATCHES_DISK);

  /** Blocks handed to Spark's own block-store client (all causes). */
  public final LongAdder fallbackBlocks = adder(ShuffleMetrics.FALLBACK_BLOCKS);

  private final Map<FallbackCause, LongAdder> fallbackByCause = byCause();

  /** Blocks failed because neither path could read them. */
  public final LongAdder failedBlocks = adder(ShuffleMetrics.FAILED_BLOCKS);

  /**
   * Why a block went to Spark's own client: a fixed set, so each cause can be a metric of its own.
   */
  public enum FallbackCause {
    /** Spark's network encryption (AES or TLS) is on: every block goes encrypted through Spark. */
    ENCRYPTION,
    /** The map output has no directory pointer (not published, or not a Memwire block). */
    NO_DIRECTORY,
    /** The peer serves over another provider than this executor reads with. */
    PROVIDER_MISMATCH,
    /** No connection to the peer's transfer node. */
    CONNECT,
    /** A one-sided read (slot, index or data) failed. */
    READ,
    /** A block larger than one read can deliver in memory. */
    TOO_LARGE,
    /** An unexpected error in the reader. */
    INTERNAL;

    /** The name used in counters and metrics, e.g. {@code noDirectory}. */
    public String metricName() {
      String[] parts = name().toLowerCase(Locale.ROOT).split("_");
      StringBuilder sb = new StringBuilder(parts[0]);
      for (int i = 1; i < parts.length; i++) {
        sb.append(Character.toUpperCase(parts[i].charAt(0))).append(parts[i].substring(1));
      }
      return sb.toString();
    }
  }

  private LongAdder adder(Metric metric) {
    LongAdder a = new LongAdder();
    adders.put(metric, a);
    return a;
  }

  private LongAdder[] family(Metric metric) {
    LongAdder[] a = new LongAdder[ShuffleMetrics.SIZE_BUCKETS.size()];
    for (int i = 0; i < a.length; i++) {
      a[i] = adder(metric.of(ShuffleMetrics.SIZE_BUCKETS.get(i)));
    }
    return a;
  }

  private Map<FallbackCause, LongAdder> byCause() {
    Map<FallbackCause, LongAdder> m = new EnumMap<>(FallbackCause.class);
    for (FallbackCause c : FallbackCause.values()) {
      m.put(c, adder(ShuffleMetrics.fallback(c)));
    }
    return m;
  }

  /** Counts {@code blocks} handed to Spark's client for {@code cause}. */
  public void fallback(FallbackCause cause, long blocks) {
    fallbackBlocks.add(blocks);
    fallbackByCause.get(cause).add(blocks);
  }

  /** Blocks handed to Spark's client for one cause. */
  public long fallbackBlocks(FallbackCause cause) {
    return fallbackByCause.get(cause).sum();
  }

  /** Counts a block of {@code bytes} delivered one-sided in its size bucket. */
  public void blockSize(long bytes) {
    int b = ShuffleMetrics.sizeBucket(bytes);
    blocksBySize[b].increment();
    bytesBySize[b].add(bytes);
  }

  /**
   * The value of a declared metric, or of a family's member ({@code fallbackBlocks.read}).
   *
   * @throws IllegalArgumentException when these counters do not count {@code metric}
   */
  public long get(Metric metric) {
    LongAdder a = adders.get(metric);
    if (a == null) {
      throw new IllegalArgumentException(metric.name() + " is not a shuffle counter");
    }
    return a.sum();
  }

  /** A snapshot by metric (families expanded to their members). */
  public Map<Metric, Long> byMetric() {
    Map<Metric, Long> m = new LinkedHashMap<>();
    adders.forEach((k, v) -> m.put(k, v.sum()));
    return Collections.unmodifiableMap(m);
  }

  /** A snapshot by name, as {@link RdmaShuffleManager#stats()} and executors' reports carry it. */
  public Map<String, Long> snapshot() {
    Map<String, Long> m = new LinkedHashMap<>();
    adders.forEach((k, v) -> m.put(k.name(), v.sum()));
    return m;
  }
}
