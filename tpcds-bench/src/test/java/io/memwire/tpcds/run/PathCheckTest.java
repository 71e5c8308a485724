package io.memwire.tpcds.run;

import static io.memwire.shuffle.ShuffleMetrics.FALLBACK_BLOCKS;
import static io.memwire.shuffle.ShuffleMetrics.RDMA_BLOCKS;
import static io.memwire.shuffle.ShuffleMetrics.RDMA_BLOCK_SIZE_BLOCKS;
import static io.memwire.shuffle.ShuffleMetrics.RDMA_BLOCK_SIZE_BYTES;
import static io.memwire.shuffle.ShuffleMetrics.RDMA_BYTES;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.tpcds.verify.Answer;
import io.memwire.tpcds.verify.PathCheckException;
import io.memwire.tpcds.worker.BlockSizes;
import io.memwire.tpcds.worker.PathCounters;
import io.memwire.tpcds.worker.QueryRun;
import io.memwire.tpcds.worker.ShuffleMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The proof check: a Memwire configuration's remote bytes must all have gone one-sided. */
class PathCheckTest {
  private static final ShuffleConfig RDMA = ShuffleConfig.parse("rdma-tcp");
  private static final ShuffleConfig SORT = ShuffleConfig.parse("sort");

  private static QueryRun run(long remoteBytes, PathCounters path) {
    ShuffleMetrics m =
        new ShuffleMetrics(4, 10, remoteBytes, 1, 0, remoteBytes, 0, 1, 0, 2, 8, 0, 5);
    return new QueryRun(
        "q3", 1_000_000, m, path, new Answer(List.of("a"), List.of("string"), List.of()));
  }

  @Test
  void everyRemoteByteOneSidedPasses() {
    assertDoesNotThrow(
        () ->
            PathCheck.check(
                "q3", RDMA, run(1000, new PathCounters(1000, 2, 0, 0, 0, BlockSizes.NONE, 0))));
    assertDoesNotThrow(
        () ->
            PathCheck.check(
                "q3", RDMA, run(0, new PathCounters(0, 0, 0, 0, 0, BlockSizes.NONE, 0))));
  }

  @Test
  void remoteBytesNotOneSidedStopTheRun() {
    PathCheckException e =
        assertThrows(
            PathCheckException.class,
            () ->
                PathCheck.check(
                    "q3", RDMA, run(1000, new PathCounters(600, 1, 1, 0, 1, BlockSizes.NONE, 0))));
    assertTrue(e.getMessage().contains("PATH CHECK FAILED in q3"), e.getMessage());
    assertTrue(
        e.getMessage()
            .contains("Spark read 1,000 remote bytes, Memwire 600 of them one-sided (400 not)"),
        e.getMessage());
    assertThrows(
        PathCheckException.class,
        () ->
            PathCheck.check(
                "q3", RDMA, run(1000, new PathCounters(1000, 2, 1, 0, 0, BlockSizes.NONE, 0))),
        "a block handed to Spark's transfer");
  }

  @Test
  void aMemwireConfigurationWithoutCountersStopsTheRun() {
    PathCheckException e =
        assertThrows(PathCheckException.class, () -> PathCheck.check("q3", RDMA, run(1000, null)));
    assertTrue(e.getMessage().contains("no Memwire counters"), e.getMessage());
  }

  @Test
  void otherManagersAreNotChecked() {
    assertDoesNotThrow(() -> PathCheck.check("q3", SORT, run(1000, null)));
  }

  @Test
  void countersBetweenSnapshots() {
    String le4k = RDMA_BLOCK_SIZE_BLOCKS.of("le4K").name();
    String le8kBytes = RDMA_BLOCK_SIZE_BYTES.of("le8K").name();
    PathCounters p =
        PathCounters.between(
            Map.of(RDMA_BYTES.name(), 100L, FALLBACK_BLOCKS.name(), 1L, le4k, 2L),
            Map.of(
                RDMA_BYTES.name(),
                350L,
                RDMA_BLOCKS.name(),
                4L,
                FALLBACK_BLOCKS.name(),
                1L,
                le4k,
                5L,
                le8kBytes,
                6000L));
    List<Long> blocks = new ArrayList<>(BlockSizes.NONE.blocks());
    blocks.set(0, 3L);
    List<Long> bytes = new ArrayList<>(BlockSizes.NONE.bytes());
    bytes.set(1, 6000L);
    assertEquals(new PathCounters(250, 4, 0, 0, 0, new BlockSizes(blocks, bytes), 0), p);
    assertEquals(50, p.notOneSidedBytes(300));
    assertEquals(0, p.notOneSidedBytes(200));
    assertNull(PathCounters.between(Map.of(), Map.of()), "a manager without counters");
  }
}
