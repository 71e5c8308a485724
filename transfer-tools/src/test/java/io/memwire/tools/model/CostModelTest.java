package io.memwire.tools.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The cost model's formulas on shapes worked out by hand (docs/COST-MODEL.md). */
class CostModelTest {
  private static final CostModel.Limits L = CostModel.Limits.defaults();

  private static Map<String, CostModel.Row> rows(CostModel.Shape s) {
    return CostModel.resources(s, L).stream()
        .collect(Collectors.toMap(CostModel.Row::quantity, r -> r));
  }

  @Test
  void executorModeQueuePairsGrowWithTheSquareOfExecutorsPerNode() {
    // 100 hosts x 8 executors, host-local reads from disk: 792 peers per executor.
    var r = rows(new CostModel.Shape(100, 8, 2000, 2000, 1, 64L << 20, false, true));
    assertEquals(792, r.get("client queue pairs").perExecutor());
    assertEquals(792 * 8, r.get("client queue pairs").perNode());
    assertEquals(792 * 8, r.get("served queue pairs").perNode());
    // 65536 entries / 16 reads per QP - 1 = 4095 QPs per CQ: one CQ per executor.
    assertEquals(1, r.get("completion queues").perExecutor());
    // 2000 maps over 800 executors: 2.5 outputs, each index + one data segment.
    assertEquals(2.5, r.get("map outputs held").perExecutor());
  }

  @Test
  void serviceModeDividesQueuePairsByExecutorsPerNode() {
    var exec = rows(new CostModel.Shape(100, 8, 2000, 2000, 1, 64L << 20, false, true));
    var svc = rows(new CostModel.Shape(100, 8, 2000, 2000, 1, 64L << 20, true, true));
    assertEquals(99, svc.get("client queue pairs").perExecutor());
    assertEquals(
        8.0,
        exec.get("client queue pairs").perNode() / svc.get("client queue pairs").perNode(),
        1e-9);
    assertEquals(792, svc.get("served queue pairs").perNode(), "every remote executor");
    assertEquals(20, svc.get("map outputs held").perNode(), "2000 maps over 100 services");
  }

  @Test
  void pinnedBytesStopAtTheRegistrationBudget() {
    // 4 executors in all, 400 maps of 256 MiB each: 25 GiB per executor, over the 16 GiB budget.
    var r = rows(new CostModel.Shape(2, 2, 400, 100, 1, 256L << 20, false, true));
    assertEquals(16L << 30, r.get("pinned bytes (verbs)").perExecutor());
    assertTrue(r.get("pinned bytes (verbs)").note().contains("registrationBudget"));
    // Index files: 400 maps x 8 x 101 bytes = 323,200 bytes, all cached.
    assertEquals(400 * 8 * 101, r.get("index bytes a reader wants").perExecutor());
  }

  @Test
  void directoryChunksFollowTheSlotWidthOfTheShuffle() {
    // 2000 reducers: 2001 entries do not fit inline, 256-byte headers, 1024 per 256 KiB chunk;
    // 4000 maps over 4 executors: 1000 each, at most 4 chunks per executor.
    var wide = rows(new CostModel.Shape(2, 2, 4000, 2000, 1, 64L << 20, false, true));
    assertEquals(4L * 256 * 1024, wide.get("directory memory").perExecutor());
    assertTrue(wide.get("directory memory").note().contains("1024 map outputs per chunk"));
    // 200 reducers: 201 entries inline, slots of (256 + 1608) rounded up to 64 = 1920 bytes,
    // 136 per chunk of 261,120 bytes: the 4000 map indexes span ceil(4000 / 136) = 30 chunks, and
    // an executor holding 1000 outputs spread over them touches all 30.
    var narrow = rows(new CostModel.Shape(2, 2, 4000, 200, 1, 64L << 20, false, true));
    assertEquals(30L * 136 * 1920, narrow.get("directory memory").perExecutor());
    assertTrue(narrow.get("directory memory").note().contains("136 map outputs per chunk"));
  }

  @Test
  void readsInFlightFollowLittlesLaw() {
    // 100 Gb/s = 12,500 bytes per microsecond; 3 us round trip holds 37,500 bytes.
    assertEquals(11, CostModel.readsInFlight(100, 4096, L)); // 37500/4096 + 1 = 10.2 -> 11
    assertEquals(2, CostModel.readsInFlight(100, 1 << 20, L)); // 0.04 + 1 -> 2
    assertEquals(20, CostModel.readsInFlight(200, 4096, L)); // 75000/4096 + 1 = 19.3 -> 20
    List<String[]> t = CostModel.bandwidth(new double[] {200}, new long[] {4096}, L);
    assertEquals("2", t.get(0)[3], "20 reads need 2 queue pairs of 16");
  }

  @Test
  void theTablesPrint() {
    String md =
        CostModel.markdown(
            new CostModel.Shape(10, 4, 2000, 2000, 2, 64L << 20, false, true),
            L,
            new double[] {25, 100},
            new long[] {4096, 1 << 20});
    assertTrue(md.contains("| client queue pairs | 36 | 144 |"), md);
    assertTrue(md.contains("| 100 Gb/s | 4.0 KiB | 11 | 1 |"), md);
  }
}
