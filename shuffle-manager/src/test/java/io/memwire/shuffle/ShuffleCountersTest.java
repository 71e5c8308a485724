package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The counters are keyed by their declarations; the block-size histogram's buckets. */
class ShuffleCountersTest {
  @Test
  void sizeBucketsAreLog2FromFourKibToSixtyFourMib() {
    assertEquals(16, ShuffleMetrics.SIZE_BUCKETS.size());
    assertEquals("le4K", ShuffleMetrics.SIZE_BUCKETS.get(0));
    assertEquals("le512K", ShuffleMetrics.SIZE_BUCKETS.get(7));
    assertEquals("le1M", ShuffleMetrics.SIZE_BUCKETS.get(8));
    assertEquals("le64M", ShuffleMetrics.SIZE_BUCKETS.get(14));
    assertEquals("gt64M", ShuffleMetrics.SIZE_BUCKETS.get(15));
    assertEquals(0, ShuffleMetrics.sizeBucket(0));
    assertEquals(0, ShuffleMetrics.sizeBucket(4096));
    assertEquals(1, ShuffleMetrics.sizeBucket(4097));
    assertEquals(1, ShuffleMetrics.sizeBucket(8192));
    assertEquals(2, ShuffleMetrics.sizeBucket(8193));
    assertEquals(8, ShuffleMetrics.sizeBucket(1 << 20));
    assertEquals(14, ShuffleMetrics.sizeBucket(64L << 20));
    assertEquals(15, ShuffleMetrics.sizeBucket((64L << 20) + 1));
    assertEquals(15, ShuffleMetrics.sizeBucket(Long.MAX_VALUE));
  }

  @Test
  void blocksAndBytesLandInTheirBuckets() {
    ShuffleCounters c = new ShuffleCounters();
    c.blockSize(100);
    c.blockSize(4096);
    c.blockSize(5000);
    c.blockSize(3L << 30);
    assertEquals(2, c.get(ShuffleMetrics.RDMA_BLOCK_SIZE_BLOCKS.of("le4K")));
    assertEquals(4196, c.get(ShuffleMetrics.RDMA_BLOCK_SIZE_BYTES.of("le4K")));
    assertEquals(1, c.get(ShuffleMetrics.RDMA_BLOCK_SIZE_BLOCKS.of("le8K")));
    assertEquals(5000, c.get(ShuffleMetrics.RDMA_BLOCK_SIZE_BYTES.of("le8K")));
    assertEquals(1, c.get(ShuffleMetrics.RDMA_BLOCK_SIZE_BLOCKS.of("gt64M")));
    assertEquals(3L << 30, c.snapshot().get("rdmaBlockSize.gt64M.bytes"));
    assertEquals(0, c.get(ShuffleMetrics.RDMA_BLOCK_SIZE_BLOCKS.of("le1M")));
  }

  @Test
  void theSnapshotHoldsEveryDeclaredCounterAndNothingElse() {
    List<String> expected = new ArrayList<>();
    for (Metric m : ShuffleMetrics.COUNTERS) {
      if (m.equals(ShuffleMetrics.FALLBACK_BLOCKS_BY_CAUSE)) {
        for (FallbackCause cause : FallbackCause.values()) {
          expected.add(ShuffleMetrics.fallback(cause).name());
        }
      } else if (m.isFamily()) {
        ShuffleMetrics.SIZE_BUCKETS.forEach(b -> expected.add(m.of(b).name()));
      } else {
        expected.add(m.name());
      }
    }
    ShuffleCounters c = new ShuffleCounters();
    assertEquals(expected, List.copyOf(c.snapshot().keySet()));
    assertEquals(expected, c.byMetric().keySet().stream().map(Metric::name).toList());
    // The names readers of earlier results know stay the same.
    assertEquals("rdmaBytes", ShuffleMetrics.RDMA_BYTES.name());
    assertEquals(
        "fallbackBlocks.noDirectory", expected.get(expected.indexOf("fallbackBlocks") + 2));
  }

  @Test
  void eachAdderCountsItsOwnMetric() {
    ShuffleCounters c = new ShuffleCounters();
    c.rdmaBytes.add(7);
    c.fallback(FallbackCause.READ, 3);
    Map<String, Long> s = c.snapshot();
    assertEquals(7, s.get(ShuffleMetrics.RDMA_BYTES.name()));
    assertEquals(7, c.get(ShuffleMetrics.RDMA_BYTES));
    assertEquals(3, c.get(ShuffleMetrics.FALLBACK_BLOCKS));
    assertEquals(3, c.get(ShuffleMetrics.fallback(FallbackCause.READ)));
    assertEquals(3, c.fallbackBlocks(FallbackCause.READ));
    assertEquals(0, c.get(ShuffleMetrics.fallback(FallbackCause.CONNECT)));
    assertEquals(0, c.get(ShuffleMetrics.RDMA_BLOCKS));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> c.get(TransportMetrics.OPEN_CONNECTIONS));
    assertEquals("openConnections is not a shuffle counter", e.getMessage());
  }

  @Test
  void nodeMetricsAreCarriedUnderThePrefix() {
    assertEquals("node.openConnections", ShuffleMetrics.node(TransportMetrics.OPEN_CONNECTIONS));
    assertEquals(
        5,
        ShuffleMetrics.delta(
            Map.of("rdmaBlocks", 2L), Map.of("rdmaBlocks", 7L), ShuffleMetrics.RDMA_BLOCKS));
    assertEquals(0, ShuffleMetrics.get(Map.of(), ShuffleMetrics.RDMA_BLOCKS));
  }
}
