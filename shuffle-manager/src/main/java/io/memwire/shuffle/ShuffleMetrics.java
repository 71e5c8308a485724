package io.memwire.shuffle;

import static io.memwire.transfer.metrics.Metric.Unit.BYTES;
import static io.memwire.transfer.metrics.Metric.Unit.COUNT;
import static io.memwire.transfer.metrics.Metric.Unit.FLAG;
import static io.memwire.transfer.metrics.Metric.Unit.MICROSECONDS;
import static io.memwire.transfer.metrics.Metric.counter;
import static io.memwire.transfer.metrics.Metric.gauge;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.Metrics;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The shuffle manager's metrics, each declared once: the keys of {@link RdmaShuffleManager#stats()}
 * ({@link #COUNTERS}, what {@link ShuffleCounters} counts, then {@link #STATE}), besides the
 * transfer node's, which it carries under {@link #node(Metric)}. Readers of the counters (the
 * metrics plugin, the main job, the TPC-DS runner, verbs-check, tests) refer to these constants
 * instead of repeating names; docs/METRICS.md shows the table {@link #main} prints.
 */
public final class ShuffleMetrics {
  private ShuffleMetrics() {}

  // Map side.

  public static final Metric OUTPUTS_PUBLISHED =
      counter("outputsPublished", COUNT, "Map outputs registered and published in the directory.");
  public static final Metric OUTPUTS_TO_SERVICE =
      counter(
          "outputsToService",
          COUNT,
          "Of those, outputs handed to the node's shuffle service (it serves them from then on).");
  public static final Metric SERVICE_ERRORS =
      counter(
          "serviceErrors",
          COUNT,
          "Outputs the node's shuffle service refused or could not take (then published here).");
  public static final Metric OUTPUTS_MIGRATED =
      counter(
          "outputsMigrated",
          COUNT,
          "Outputs migrated here off a decommissioned executor, published and re-pointed.");
  public static final Metric MIGRATED_NOT_REPOINTED =
      counter(
          "migratedNotRepointed",
          COUNT,
          "Outputs migrated here that kept Spark's location without a pointer (logged why).");
  public static final Metric OUTPUTS_SERVED_BY_FALLBACK =
      counter(
          "outputsServedByFallback",
          COUNT,
          "Map outputs left to Spark's own transfer (budget exhausted, registration failed).");
  public static final Metric PUBLISH_MICROS =
      counter(
          "publishMicros",
          MICROSECONDS,
          "Time map tasks spent making their finished outputs readable one-sided (registering the"
              + " files, writing the slot, or handing them to the shuffle service).");

  // Reduce side: blocks delivered one-sided.

  public static final Metric RDMA_BLOCKS =
      counter(
          "rdmaBlocks", COUNT, "Blocks (single or batch) delivered to Spark by one-sided reads.");
  public static final Metric RDMA_BATCH_BLOCKS =
      counter("rdmaBatchBlocks", COUNT, "Of those, batch blocks (`shuffle_S_M_A_B`).");
  public static final Metric RDMA_BLOCKS_TO_DISK =
      counter(
          "rdmaBlocksToDisk",
          COUNT,
          "Of those, blocks Spark wanted on disk (above spark.network.maxRemoteBlockSizeFetchToMem).");
  public static final Metric RDMA_BYTES =
      counter(
          "rdmaBytes",
          BYTES,
          "Block bytes delivered to Spark by one-sided reads (what Spark counts as remote bytes).");

  /**
   * The size buckets of {@link #RDMA_BLOCK_SIZE_BLOCKS}: {@code le4K} holds blocks of at most 4
   * KiB, each next one up to twice the size ({@code le8K} up to 8 KiB ... {@code le64M}), {@code
   * gt64M} the rest.
   */
  public static final List<String> SIZE_BUCKETS = sizeBuckets();

  public static final Metric RDMA_BLOCK_SIZE_BLOCKS =
      counter(
          "rdmaBlockSize.<bucket>.blocks",
          COUNT,
          "Blocks delivered one-sided by size: `<bucket>` is `le4K` (at most 4 KiB), `le8K`, ..."
              + " `le64M` (each up to twice the one before), `gt64M`.");
  public static final Metric RDMA_BLOCK_SIZE_BYTES =
      counter(
          "rdmaBlockSize.<bucket>.bytes",
          BYTES,
          "Bytes of the blocks delivered one-sided, by the same size buckets.");

  // Reduce side: how blocks were located.

  public static final Metric FETCH_REQUESTS =
      counter(
          "fetchRequests",
          COUNT,
          "Fetch requests (one peer, many blocks) that delivered at least one block one-sided.");
  public static final Metric FIRST_BLOCK_MICROS =
      counter(
          "firstBlockMicros",
          MICROSECONDS,
          "Sum over those requests of the time from Spark's call to the first block handed over.");
  public static final Metric SLOT_READS =
      counter("slotReads", COUNT, "Directory slots read from peers (cache misses).");
  public static final Metric INDEX_READS =
      counter(
          "indexReads", COUNT, "Whole index files read from peers (then kept for later tasks).");
  public static final Metric INDEX_ENTRY_READS =
      counter(
          "indexEntryReads",
          COUNT,
          "Reads of one block's index entries (index too large, or the cache full or off).");
  public static final Metric INDEX_CACHE_HITS =
      counter(
          "indexCacheHits",
          COUNT,
          "Blocks located from an index this executor already kept: no index read at all.");
  public static final Metric STALE_SLOTS =
      counter(
          "staleSlots",
          COUNT,
          "Slots whose map id did not match after the re-read: reported as fetch failures.");

  public static final Metric METADATA_READS =
      counter(
          "metadataReads",
          COUNT,
          "Batches of metadata reads (directory slots with their inline index entries, index"
              + " files or entries) posted to peers: the round trips a fetch request waits for"
              + " before its data.");
  public static final Metric POINTERS_RERESOLVED =
      counter(
          "pointersReresolved",
          COUNT,
          "Directory pointers from before a shuffle service restart that the service resolved to"
              + " their new chunk (one request each): their blocks were read one-sided again.");
  public static final Metric RERESOLVE_FAILURES =
      counter(
          "reresolveFailures",
          COUNT,
          "Pointers the restarted shuffle service did not resolve (refused or not reached): their"
              + " blocks fell back, or failed the fetch.");

  // Reduce side: integrity (Spark's shuffle checksums).

  public static final Metric CHECKSUM_VERIFIED_BLOCKS =
      counter(
          "checksumVerifiedBlocks",
          COUNT,
          "Blocks read one-sided whose every reduce partition matched the checksum Spark stored"
              + " beside the map output, before Spark saw a byte.");
  public static final Metric CHECKSUM_UNVERIFIED_BLOCKS =
      counter(
          "checksumUnverifiedBlocks",
          COUNT,
          "Blocks read one-sided without a stored checksum to check (checksums off, no checksum"
              + " file, an output's metadata region refused by a registration limit, more than"
              + " 2^20 reduce partitions).");
  public static final Metric CHECKSUM_MISMATCHES_NETWORK =
      counter(
          "checksumMismatches.network",
          COUNT,
          "Blocks whose first read did not match their checksum and whose re-read from the same"
              + " region did: a transfer fault, delivered right.");
  public static final Metric CHECKSUM_MISMATCHES_DISK =
      counter(
          "checksumMismatches.disk",
          COUNT,
          "Blocks whose bytes did not match their checksum on two reads: the stored bytes (data or"
              + " checksum file) are wrong; failed as fetch failures, so Spark reruns the map.");

  // Reduce side: blocks not read one-sided.

  public static final Metric FALLBACK_BLOCKS =
      counter(
          "fallbackBlocks", COUNT, "Blocks handed to Spark's own block-store client, all causes.");
  public static final Metric FALLBACK_BLOCKS_BY_CAUSE =
      counter(
          "fallbackBlocks.<cause>",
          COUNT,
          "Of those, by cause: "
              + Arrays.stream(FallbackCause.values())
                  .map(c -> "`" + c.metricName() + "`")
                  .collect(Collectors.joining(", "))
              + ".");
  public static final Metric FAILED_BLOCKS =
      counter("failedBlocks", COUNT, "Blocks failed because neither path could read them.");

  // The manager's state.

  public static final Metric TRANSPORT_ACTIVE =
      gauge("transportActive", FLAG, "Whether this JVM's transfer node runs.");
  public static final Metric SERVICE_CONNECTED =
      gauge(
          "serviceConnected",
          FLAG,
          "Service mode: whether the executor is connected to the node's shuffle service.");
  public static final Metric DIRECTORY_SHUFFLES =
      gauge(
          "directory.shuffles",
          COUNT,
          "Shuffles with outputs in this executor's directory (while the transport runs).");
  public static final Metric INDEX_CACHE_BYTES =
      gauge(
          "indexCache.bytes",
          BYTES,
          "Bytes of map outputs' index entries this executor's readers cache now (while the"
              + " transport runs).");

  /** What {@link ShuffleCounters} counts, in documentation order (families unexpanded). */
  public static final List<Metric> COUNTERS =
      List.of(
          OUTPUTS_PUBLISHED,
          OUTPUTS_TO_SERVICE,
          SERVICE_ERRORS,
          OUTPUTS_MIGRATED,
          MIGRATED_NOT_REPOINTED,
          OUTPUTS_SERVED_BY_FALLBACK,
          PUBLISH_MICROS,
          RDMA_BLOCKS,
          RDMA_BATCH_BLOCKS,
          RDMA_BLOCKS_TO_DISK,
          RDMA_BYTES,
          RDMA_BLOCK_SIZE_BLOCKS,
          RDMA_BLOCK_SIZE_BYTES,
          FETCH_REQUESTS,
          FIRST_BLOCK_MICROS,
          SLOT_READS,
          INDEX_READS,
          INDEX_ENTRY_READS,
          INDEX_CACHE_HITS,
          STALE_SLOTS,
          METADATA_READS,
          POINTERS_RERESOLVED,
          RERESOLVE_FAILURES,
          CHECKSUM_VERIFIED_BLOCKS,
          CHECKSUM_UNVERIFIED_BLOCKS,
          CHECKSUM_MISMATCHES_NETWORK,
          CHECKSUM_MISMATCHES_DISK,
          FALLBACK_BLOCKS,
          FALLBACK_BLOCKS_BY_CAUSE,
          FAILED_BLOCKS);

  /** The manager's state in {@link RdmaShuffleManager#stats()}, after the counters. */
  public static final List<Metric> STATE =
      List.of(TRANSPORT_ACTIVE, SERVICE_CONNECTED, DIRECTORY_SHUFFLES, INDEX_CACHE_BYTES);

  /** Every metric of {@link RdmaShuffleManager#stats()} but the node's, in documentation order. */
  public static final List<Metric> ALL = Stream.of(COUNTERS, STATE).flatMap(List::stream).toList();

  /** Prefix of the transfer node's metrics in {@link RdmaShuffleManager#stats()}. */
  public static final String NODE_PREFIX = "node.";

  /** The key of a transport metric of the manager's node in {@link RdmaShuffleManager#stats()}. */
  public static String node(Metric transport) {
    return NODE_PREFIX + transport.name();
  }

  /** The member of {@link #FALLBACK_BLOCKS_BY_CAUSE} for {@code cause}. */
  public static Metric fallback(FallbackCause cause) {
    return FALLBACK_BLOCKS_BY_CAUSE.of(cause.metricName());
  }

  /** The index in {@link #SIZE_BUCKETS} of a block of {@code bytes}. */
  public static int sizeBucket(long bytes) {
    if (bytes <= 4096) {
      return 0;
    }
    int log2 = 64 - Long.numberOfLeadingZeros(bytes - 1); // ceil(log2(bytes))
    return Math.min(log2 - 12, SIZE_BUCKETS.size() - 1);
  }

  /** {@code metric}'s value in a stats map (a snapshot, a sum over executors), 0 when absent. */
  public static long get(Map<String, Long> stats, Metric metric) {
    return stats.getOrDefault(metric.name(), 0L);
  }

  /** {@code after - before} for {@code metric} (0 where absent). */
  public static long delta(Map<String, Long> before, Map<String, Long> after, Metric metric) {
    return get(after, metric) - get(before, metric);
  }

  /** The table of docs/METRICS.md's "Manager counters". */
  public static String table() {
    return Metrics.markdownTable(ALL);
  }

  /** Prints the table of docs/METRICS.md, to paste it there after a change. */
  public static void main(String[] args) {
    System.out.print(table());
  }

  private static List<String> sizeBuckets() {
    List<String> b = new ArrayList<>();
    for (int i = 0; i <= 14; i++) {
      long kib = 4L << i;
      b.add(kib < 1024 ? "le" + kib + "K" : "le" + (kib >> 10) + "M");
    }
    b.add("gt64M");
    return List.copyOf(b);
  }
}
