package io.memwire.shuffle;

import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** What the manager did in this JVM: outputs published, blocks read one-sided, fallbacks. */
public final class ShuffleCounters {
  /** Map outputs registered and published in the directory. */
  public final LongAdder outputsPublished = new LongAdder();

  /** Of those, outputs handed to the node's shuffle service (it serves them from then on). */
  public final LongAdder outputsToService = new LongAdder();

  /** Outputs the node's shuffle service refused or could not take (then published here). */
  public final LongAdder serviceErrors = new LongAdder();

  /** Outputs migrated here off a decommissioned executor, published and re-pointed. */
  public final LongAdder outputsMigrated = new LongAdder();

  /** Outputs migrated here that kept Spark's location without a pointer (logged why). */
  public final LongAdder migratedNotRepointed = new LongAdder();

  /** Map outputs left to Spark's own transfer (budget exhausted, registration failed). */
  public final LongAdder outputsServedByFallback = new LongAdder();

  /** Blocks (single or batch) delivered to Spark by one-sided reads. */
  public final LongAdder rdmaBlocks = new LongAdder();

  /** Of those, batch blocks (shuffle_s_m_a_b). */
  public final LongAdder rdmaBatchBlocks = new LongAdder();

  /** Of those, blocks Spark wanted on disk (above spark.network.maxRemoteBlockSizeFetchToMem). */
  public final LongAdder rdmaBlocksToDisk = new LongAdder();

  /** Block data bytes delivered to Spark by one-sided reads (what Spark counts as remote bytes). */
  public final LongAdder rdmaBytes = new LongAdder();

  /** Fetch requests (one peer, many blocks) that delivered at least one block one-sided. */
  public final LongAdder fetchRequests = new LongAdder();

  /** Sum over those requests of the microseconds from Spark's call to the first block handed. */
  public final LongAdder firstBlockMicros = new LongAdder();

  /**
   * Batches of metadata reads (directory slots, index files or entries) posted to peers: the round
   * trips a fetch request makes before it can read data.
   */
  public final LongAdder metadataReads = new LongAdder();

  /** Directory slots read from peers (cache misses). */
  public final LongAdder slotReads = new LongAdder();

  /** Whole index files read from peers (then kept for later tasks). */
  public final LongAdder indexReads = new LongAdder();

  /** Reads of one block's index entries (index too large or the cache full or off). */
  public final LongAdder indexEntryReads = new LongAdder();

  /** Blocks located from an index this executor already kept: no index read at all. */
  public final LongAdder indexCacheHits = new LongAdder();

  /** Slots whose map id did not match after the re-read: reported as fetch failures. */
  public final LongAdder staleSlots = new LongAdder();

  /** Blocks handed to Spark's own block-store client (all causes). */
  public final LongAdder fallbackBlocks = new LongAdder();

  private final Map<FallbackCause, LongAdder> fallbackByCause = new EnumMap<>(FallbackCause.class);

  /** Blocks failed because neither path could read them. */
  public final LongAdder failedBlocks = new LongAdder();

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

  public ShuffleCounters() {
    for (FallbackCause c : FallbackCause.values()) {
      fallbackByCause.put(c, new LongAdder());
    }
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

  /** A snapshot by name ({@code fallbackBlocks.<cause>} for each cause). */
  public Map<String, Long> snapshot() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("outputsPublished", outputsPublished.sum());
    m.put("outputsToService", outputsToService.sum());
    m.put("serviceErrors", serviceErrors.sum());
    m.put("outputsMigrated", outputsMigrated.sum());
    m.put("migratedNotRepointed", migratedNotRepointed.sum());
    m.put("outputsServedByFallback", outputsServedByFallback.sum());
    m.put("rdmaBlocks", rdmaBlocks.sum());
    m.put("rdmaBatchBlocks", rdmaBatchBlocks.sum());
    m.put("rdmaBlocksToDisk", rdmaBlocksToDisk.sum());
    m.put("rdmaBytes", rdmaBytes.sum());
    m.put("fetchRequests", fetchRequests.sum());
    m.put("firstBlockMicros", firstBlockMicros.sum());
    m.put("metadataReads", metadataReads.sum());
    m.put("slotReads", slotReads.sum());
    m.put("indexReads", indexReads.sum());
    m.put("indexEntryReads", indexEntryReads.sum());
    m.put("indexCacheHits", indexCacheHits.sum());
    m.put("staleSlots", staleSlots.sum());
    m.put("fallbackBlocks", fallbackBlocks.sum());
    for (FallbackCause c : FallbackCause.values()) {
      m.put("fallbackBlocks." + c.metricName(), fallbackByCause.get(c).sum());
    }
    m.put("failedBlocks", failedBlocks.sum());
    return m;
  }
}
