package io.memwire.shuffle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The scale series' points and its summary arithmetic (the runs themselves need a cluster). */
class ScaleSeriesTest {

  @Test
  void aSizeAloneTakesTheBenchmarksShapeAndAShapeIsTakenAsGiven() {
    ScaleSeries.Point small = ScaleSeries.Point.parse("256m");
    assertEquals(256L << 20, small.bytes());
    assertEquals(8, small.maps());
    assertEquals(8, small.reducers());
    assertEquals(64, ScaleSeries.Point.parse("8g").maps());
    assertEquals(4, ScaleSeries.Point.parse("16m").maps());
    ScaleSeries.Point wide = ScaleSeries.Point.parse("1g@2000x1500");
    assertEquals(2000, wide.maps());
    assertEquals(1500, wide.reducers());
    assertEquals(3_000_000L, wide.blocks());
  }

  @Test
  void badPointsAreRefusedWithTheSpecInTheMessage() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ScaleSeries.Point.parse("1g@20"));
    assertEquals("not SIZE@MAPSxREDUCERS: 1g@20", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> ScaleSeries.Point.parse("1k@2000x2000"));
    assertThrows(IllegalArgumentException.class, () -> ScaleSeries.Point.parse("1g@0x10"));
  }

  @Test
  void theSummaryGivesMediansRatiosTheirSpreadAndFiguresPerUnitOfWork() {
    ScaleSeries.Point p = ScaleSeries.Point.parse("1g");
    List<ScaleSeries.Run> runs = new ArrayList<>();
    double[] netty = {10, 12, 11};
    double[] rdma = {9, 12, 13.2};
    for (int round = 0; round < 3; round++) {
      runs.add(run(p, "netty", round, netty[round], 400, -1));
      runs.add(run(p, "rdma", round, rdma[round], 200, 512L << 20));
    }
    List<String[]> rows = ScaleSeries.summary(List.of(p), List.of("groupByKey"), runs);
    assertEquals(2, rows.size());
    assertEquals(rows.get(0).length, rows.get(1).length, "a value for every column");
    Map<String, String> row = new java.util.LinkedHashMap<>();
    for (int i = 0; i < rows.get(0).length; i++) {
      row.put(rows.get(0)[i], rows.get(1)[i]);
    }
    assertEquals("11.000", row.get("netty_wall_s"));
    assertEquals("12.000", row.get("rdma_wall_s"));
    assertEquals("1.091", row.get("wall_ratio"));
    assertEquals("0.900", row.get("wall_ratio_min")); // round 0: 9 / 10
    assertEquals("1.200", row.get("wall_ratio_max")); // round 2: 13.2 / 11
    assertEquals("0.500", row.get("serving_cpu_ratio"));
    assertEquals("0.500", row.get("transport_cpu_ratio"));
    assertEquals("1200.000", row.get("netty_jit_ms"));
    assertEquals("600.000", row.get("rdma_jit_ms"));
    assertEquals("1000.000", row.get("rdma_gc_ms"));
    assertEquals("512.000", row.get("rdma_registered_peak_mib"));
    assertEquals("512.000", row.get("rdma_registered_peak_per_data_gib_mib"));
    assertEquals("12.000", row.get("rdma_wall_s_per_gib"));
    assertEquals("32.000", row.get("rdma_heap_after_gc_mib"));
  }

  private static ScaleSeries.Run run(
      ScaleSeries.Point p, String manager, int round, double wall, long servingMs, long reg) {
    long gib = 1L << 30;
    ShuffleBenchmark.Result r =
        new ShuffleBenchmark.Result(
            wall,
            100,
            gib,
            wall / 2,
            servingMs * 1_000_000,
            servingMs * 2_000_000,
            10_000_000_000L,
            servingMs * 3_000_000,
            1_000_000_000L);
    assertEquals((double) servingMs, r.perGiB(r.servingCpuNanos()), 1e-9);
    return new ScaleSeries.Run(
        p, "groupByKey", manager, round, r, new ExecutorFootprint(64L << 20, 32L << 20, 8, reg, 8));
  }
}
