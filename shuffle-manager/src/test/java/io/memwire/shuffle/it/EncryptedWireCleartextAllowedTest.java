package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.metrics.ExecutorReport;
import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * spark.network.crypto.enabled=true with spark.shuffle.rdma.allowCleartextReads=true: blocks are
 * read one-sided. Also the metrics plugin: Spark's CSV sink shows Memwire's metrics of both
 * executors and the driver's totals, the driver's accessor agrees with the executors' own counters,
 * and the executors' final reports reach the driver when the application stops.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class EncryptedWireCleartextAllowedTest extends WireEncryptionTestBase {
  private static final String PLUGIN = "plugin." + MemwireMetricsPlugin.class.getName() + ".";

  @Override
  Map<String, String> variant() {
    return Map.of("spark.shuffle.rdma.allowCleartextReads", "true");
  }

  @Test
  @Order(1)
  void blocksAreReadOneSided() throws Exception {
    for (Run r : runJobs()) {
      assertEquals(0, r.delta(ShuffleMetrics.FALLBACK_BLOCKS), r.job() + ": " + r.after());
      assertTrue(r.delta(ShuffleMetrics.RDMA_BLOCKS) > 0, r.job());
      assertEquals(
          r.sparkRemoteBytes(),
          r.delta(ShuffleMetrics.RDMA_BYTES),
          r.job() + ": Spark's remote bytes must all come one-sided");
    }
  }

  @Test
  @Order(2)
  void driverTotalsEqualTheExecutorsCounters() throws Exception {
    var stats = Clusters.executorStats(cluster.javaSparkContext(), 2);
    Map<String, Map<String, Long>> totals =
        MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), Duration.ofSeconds(60));
    assertEquals(stats.keySet(), totals.keySet());
    for (String id : stats.keySet()) {
      Map<String, Long> t = totals.get(id);
      assertTrue(t.get("oneSided.blocks") > 0, id + " " + t);
      assertEquals(
          stats.get(id).get(ShuffleMetrics.RDMA_BLOCKS.name()), t.get("oneSided.blocks"), id);
      assertEquals(
          stats.get(id).get(ShuffleMetrics.RDMA_BYTES.name()), t.get("oneSided.bytes"), id);
      assertEquals(
          stats.get(id).get(ShuffleMetrics.INDEX_CACHE_HITS.name()), t.get("indexCache.hits"), id);
      assertEquals(1L, t.get("transport.active"), id);
      assertTrue(t.get("registration.budget") > 0, id + " " + t);
      assertTrue(t.get("bufferPool.bytes") > 0, id + " " + t);
      assertTrue(t.get("connections.open") > 0, id + " " + t);
      assertEquals(0L, t.get("fallback.blocks"), id + " " + t);
    }
  }

  @Test
  @Order(3)
  void csvSinkShowsMemwireMetricsOfBothExecutorsAndTheDriver() throws Exception {
    String app = cluster.sparkContext().applicationId();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (true) {
      try {
        for (String id : List.of("0", "1")) {
          assertTrue(lastValue(app + "." + id + "." + PLUGIN + "oneSided.blocks") > 0, id);
          assertTrue(lastValue(app + "." + id + "." + PLUGIN + "oneSided.bytes") > 0, id);
          assertTrue(lastValue(app + "." + id + "." + PLUGIN + "registration.bytes") > 0, id);
          // Each executor read from the other: its histogram for that peer has samples.
          String peer = id.equals("0") ? "1" : "0";
          assertTrue(
              lastValue(app + "." + id + "." + PLUGIN + "readLatencyMicros." + peer) > 0,
              id + " read latency from " + peer);
        }
        assertTrue(lastValue(app + ".driver." + PLUGIN + "total.oneSided.blocks") > 0);
        return;
      } catch (AssertionError e) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError(e.getMessage() + "; CSV files: " + csvFiles(), e);
        }
        Thread.sleep(200);
      }
    }
  }

  @Test
  @Order(4)
  void totalsOutliveTheApplicationAndExecutorsSendFinalReports() throws Exception {
    Map<String, Map<String, Long>> before =
        MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), Duration.ofSeconds(60));
    cluster.close();
    cluster = null;
    Map<String, ExecutorReport> reports = MemwireMetricsPlugin.executorReports();
    assertEquals(java.util.Set.of("0", "1"), reports.keySet());
    for (ExecutorReport r : reports.values()) {
      Map<String, Long> was = before.get(r.executorId());
      for (String counter :
          List.of(
              "oneSided.blocks",
              "oneSided.bytes",
              "indexCache.hits",
              "outputs.published",
              "fallback.blocks")) {
        assertEquals(was.get(counter), r.values().get(counter), r.executorId() + " " + counter);
      }
    }
    // Sent from each executor's plugin shutdown and acknowledged by the driver (an executor can
    // be killed before it gets there, so at least one, not necessarily both).
    assertTrue(
        reports.values().stream().anyMatch(ExecutorReport::last),
        "no executor's final report reached the driver: " + reports);
  }

  /**
   * The first value column of a CSV sink file's last line (a gauge's value, a histogram's count).
   */
  private long lastValue(String metric) {
    Path f = csvDir.resolve(metric + ".csv");
    assertTrue(Files.exists(f), "no CSV file " + f.getFileName());
    try {
      List<String> lines = Files.readAllLines(f);
      assertTrue(lines.size() > 1, f + " has no values");
      String[] cols = lines.get(lines.size() - 1).split(",");
      assertTrue(cols.length > 1, f + " last line " + lines.get(lines.size() - 1));
      return (long) Double.parseDouble(cols[1]);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private String csvFiles() {
    try (Stream<Path> s = Files.list(csvDir)) {
      return s.map(p -> p.getFileName().toString())
          .filter(n -> n.contains("MemwireMetrics"))
          .sorted()
          .collect(Collectors.joining(", "));
    } catch (IOException e) {
      return e.toString();
    }
  }
}
