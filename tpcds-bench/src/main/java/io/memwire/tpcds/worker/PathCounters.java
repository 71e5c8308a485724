package io.memwire.tpcds.worker;

import static io.memwire.shuffle.ShuffleMetrics.FAILED_BLOCKS;
import static io.memwire.shuffle.ShuffleMetrics.FALLBACK_BLOCKS;
import static io.memwire.shuffle.ShuffleMetrics.OUTPUTS_SERVED_BY_FALLBACK;
import static io.memwire.shuffle.ShuffleMetrics.PUBLISH_MICROS;
import static io.memwire.shuffle.ShuffleMetrics.RDMA_BLOCKS;
import static io.memwire.shuffle.ShuffleMetrics.RDMA_BYTES;
import static io.memwire.shuffle.ShuffleMetrics.delta;

import java.util.Map;

/**
 * Which path moved a query's shuffle bytes, from the shuffle manager's own counters (differences of
 * {@link io.memwire.shuffle.metrics.ExecutorCounters} sums taken before and after the query, over
 * all executors).
 *
 * @param oneSidedBytes block bytes Memwire delivered to Spark by one-sided reads
 * @param oneSidedBlocks blocks delivered that way
 * @param fallbackBlocks blocks Memwire handed to Spark's own transfer
 * @param failedBlocks blocks neither path could read
 * @param fallbackOutputs map outputs not registered for one-sided reads (served by Spark's
 *     transfer)
 * @param blockSizes the sizes of the blocks read one-sided
 * @param publishMicros time the map tasks spent making their outputs readable one-sided
 */
public record PathCounters(
    long oneSidedBytes,
    long oneSidedBlocks,
    long fallbackBlocks,
    long failedBlocks,
    long fallbackOutputs,
    BlockSizes blockSizes,
    long publishMicros) {
  /**
   * The counters between two {@link io.memwire.shuffle.metrics.ExecutorCounters#sum} snapshots, or
   * null when the manager keeps none.
   */
  public static PathCounters between(Map<String, Long> before, Map<String, Long> after) {
    if (!after.containsKey(RDMA_BYTES.name())) {
      return null;
    }
    return new PathCounters(
        delta(before, after, RDMA_BYTES),
        delta(before, after, RDMA_BLOCKS),
        delta(before, after, FALLBACK_BLOCKS),
        delta(before, after, FAILED_BLOCKS),
        delta(before, after, OUTPUTS_SERVED_BY_FALLBACK),
        BlockSizes.between(before, after),
        delta(before, after, PUBLISH_MICROS));
  }

  /**
   * Spark's remote bytes that did not arrive one-sided: {@code remoteBytes} less the one-sided
   * bytes, never below zero.
   */
  public long notOneSidedBytes(long remoteBytes) {
    return Math.max(0, remoteBytes - oneSidedBytes);
  }

  /** The sum of this and {@code o}. */
  public PathCounters plus(PathCounters o) {
    return new PathCounters(
        oneSidedBytes + o.oneSidedBytes,
        oneSidedBlocks + o.oneSidedBlocks,
        fallbackBlocks + o.fallbackBlocks,
        failedBlocks + o.failedBlocks,
        fallbackOutputs + o.fallbackOutputs,
        blockSizes.plus(o.blockSizes),
        publishMicros + o.publishMicros);
  }
}
