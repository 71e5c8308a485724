package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.metrics.TransportMetrics;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/** docs/METRICS.md shows exactly the table generated from the transport's metric declarations. */
class MetricsDocTest {
  @Test
  void docsShowTheGeneratedTransportTable() throws Exception {
    String doc = Files.readString(Paths.get("..", "docs", "METRICS.md"));
    String table = TransportMetrics.table();
    assertTrue(
        doc.contains(table),
        "regenerate the transport table in docs/METRICS.md with: "
            + "java -cp block-transfer/target/classes io.memwire.transfer.metrics.TransportMetrics\n"
            + table);
  }

  @Test
  void tableGeneratorReadsTheDeclarations() {
    // A hand-checked sample, so a formatter bug cannot make docs and generator agree on nonsense.
    String t = TransportMetrics.table();
    assertTrue(t.startsWith("| metric | kind | unit | meaning |\n| --- | --- | --- | --- |\n"), t);
    assertTrue(t.contains("| `bytesRead` | counter | bytes | Bytes delivered by "), t);
    assertTrue(t.contains("| `openConnections` | gauge | count | "), t);
    assertTrue(t.contains("| `memory.<allocator>.peakBytes` | gauge | bytes | "), t);
    assertTrue(t.contains("| `verbsConnectionsRefused` | counter | count | "), t);
  }
}
