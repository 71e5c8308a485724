package io.memwire.tools.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A measured block-size histogram: parsing, its mean, and the mix's reads in flight. */
class BlockHistogramTest {
  @Test
  void parsesBucketsInAnyOrderWithTheOpenEndedOneLast() {
    BlockHistogram h = BlockHistogram.parse(">64m=1:100000000, 4k=3:6000,8k=1:8000");
    assertEquals(3, h.buckets().size());
    assertEquals(4096, h.buckets().get(0).upTo());
    assertEquals(8192, h.buckets().get(1).upTo());
    assertTrue(h.buckets().get(2).last());
    assertEquals(5, h.blocks());
    assertEquals(100_014_000, h.bytes());
    assertEquals(20_002_800, h.meanBlock());
  }

  @Test
  void theMixNeedsTheReadsInFlightOfItsMeanBlock() {
    // 3 blocks of 2 KiB and 1 of 18 KiB: mean 6 KiB. 100 Gb/s, 3 us: 37,500 / 6144 + 1 -> 8.
    BlockHistogram h = BlockHistogram.parse("4k=3:6144,32k=1:18432");
    assertEquals(6144, h.meanBlock());
    assertEquals(8, CostModel.readsInFlight(100, h.meanBlock(), CostModel.Limits.defaults()));
    String md = h.markdown(new double[] {100}, CostModel.Limits.defaults());
    assertTrue(md.contains("| ≤ 4.0 KiB | 3 | 75.0 | 25.0 |"), md);
    assertTrue(md.contains("| ≤ 32.0 KiB | 1 | 25.0 | 75.0 |"), md);
    assertTrue(md.contains("| 100 Gb/s | mean 6.0 KiB | 8 | 1 | 2.03 M |"), md);
  }

  @Test
  void aBadItemIsNamed() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> BlockHistogram.parse("4k=3,8k=1:10"));
    assertTrue(e.getMessage().contains("'4k=3' is not SIZE=BLOCKS:BYTES"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> BlockHistogram.parse("4k=0:0"));
  }
}
