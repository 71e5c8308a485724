package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import io.memwire.flight.metrics.FlightMetrics;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.Test;

/**
 * Flight's stats are keyed by the declared metrics, exported from them, and docs/FLIGHT.md shows
 * the tables generated from them.
 */
class FlightStatsMetricsTest {
  @Test
  void docsShowTheGeneratedTables() throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "FLIGHT.md"));
    String fix =
        "regenerate the tables in docs/FLIGHT.md (Metrics) with: java -cp ... "
            + "io.memwire.flight.FlightStatsMetrics\n";
    assertTrue(
        doc.contains(FlightStatsMetrics.serverTable()), fix + FlightStatsMetrics.serverTable());
    assertTrue(
        doc.contains(FlightStatsMetrics.clientTable()), fix + FlightStatsMetrics.clientTable());
  }

  @Test
  void tablesReadTheDeclarations() {
    String s = FlightStatsMetrics.serverTable();
    assertTrue(s.startsWith("| metric | kind | unit | meaning |\n| --- | --- | --- | --- |\n"), s);
    assertTrue(s.contains("| `bodyBytes` | counter | bytes | "), s);
    assertTrue(s.contains("| `leaseRegionBytes` | gauge | bytes | "), s);
    String c = FlightStatsMetrics.clientTable();
    assertTrue(c.contains("| `fallbacks.<reason>` | counter | count | "), c);
    assertTrue(c.contains("| `bodiesMismatched` | counter | count | "), c);
  }

  /** Every key the stats have is declared, every declared key is there, in declaration order. */
  @Test
  void statsHaveExactlyTheDeclaredKeysAndAreExportedByThem() throws Exception {
    try (Fixture f = new Fixture(CompressionUtil.CodecType.NO_COMPRESSION)) {
      assertEquals(FlightStatsMetrics.serverKeys(), List.copyOf(f.rdma.stats().keySet()));
      RdmaFlightClient client = f.sharedRdmaClient();
      assertEquals(FlightStatsMetrics.clientKeys(), List.copyOf(client.stats().keySet()));
      assertTrue(FlightStatsMetrics.clientKeys().contains("fallbacks.lease_ended"));

      MetricRegistry registry = new MetricRegistry();
      try (FlightMetrics.Registration s = FlightMetrics.register(registry, "s", f.rdma);
          FlightMetrics.Registration c = FlightMetrics.register(registry, "c", client)) {
        assertEquals(
            FlightStatsMetrics.serverKeys().stream().map(k -> "s." + k).toList(), s.names());
        assertEquals(
            FlightStatsMetrics.clientKeys().stream().map(k -> "c." + k).toList(), c.names());
      }
      assertTrue(registry.getNames().isEmpty());
    }
  }
}
