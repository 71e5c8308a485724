package io.memwire.tpcds.worker;

import io.memwire.shuffle.ShuffleMetrics;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The sizes of the blocks a query's reducers read one-sided, from the shuffle manager's histogram
 * ({@link ShuffleMetrics#RDMA_BLOCK_SIZE_BLOCKS} and {@link ShuffleMetrics#RDMA_BLOCK_SIZE_BYTES}):
 * per bucket of {@link ShuffleMetrics#SIZE_BUCKETS}, blocks and their bytes.
 *
 * @param blocks blocks per bucket, in the order of {@link #buckets()}
 * @param bytes their bytes per bucket
 */
public record BlockSizes(List<Long> blocks, List<Long> bytes) {
  /** No block. */
  public static final BlockSizes NONE =
      new BlockSizes(zeros(buckets().size()), zeros(buckets().size()));

  /** Checks both lists have one value per bucket. */
  public BlockSizes {
    if (blocks.size() != buckets().size() || bytes.size() != buckets().size()) {
      throw new IllegalArgumentException(
          "one value per bucket " + buckets() + " expected: " + blocks + ", " + bytes);
    }
    blocks = List.copyOf(blocks);
    bytes = List.copyOf(bytes);
  }

  /** The bucket labels ({@code le4K} ... {@code le64M}, {@code gt64M}). */
  public static List<String> buckets() {
    return ShuffleMetrics.SIZE_BUCKETS;
  }

  /** The histogram between two sums of the manager's counters. */
  public static BlockSizes between(Map<String, Long> before, Map<String, Long> after) {
    List<Long> blocks = new ArrayList<>();
    List<Long> bytes = new ArrayList<>();
    for (String b : buckets()) {
      blocks.add(ShuffleMetrics.delta(before, after, ShuffleMetrics.RDMA_BLOCK_SIZE_BLOCKS.of(b)));
      bytes.add(ShuffleMetrics.delta(before, after, ShuffleMetrics.RDMA_BLOCK_SIZE_BYTES.of(b)));
    }
    return new BlockSizes(blocks, bytes);
  }

  /** The sum of this and {@code o}. */
  public BlockSizes plus(BlockSizes o) {
    List<Long> bl = new ArrayList<>();
    List<Long> by = new ArrayList<>();
    for (int i = 0; i < blocks.size(); i++) {
      bl.add(blocks.get(i) + o.blocks.get(i));
      by.add(bytes.get(i) + o.bytes.get(i));
    }
    return new BlockSizes(bl, by);
  }

  /** Blocks over every bucket. */
  public long totalBlocks() {
    return blocks.stream().mapToLong(Long::longValue).sum();
  }

  /** Bytes over every bucket. */
  public long totalBytes() {
    return bytes.stream().mapToLong(Long::longValue).sum();
  }

  private static List<Long> zeros(int n) {
    return Collections.nCopies(n, 0L);
  }
}
