package io.memwire.shuffle.metrics;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleMetrics;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/**
 * docs/METRICS.md shows exactly the tables generated from the shuffle manager's metric
 * declarations: the Spark metrics ({@link MemwireMetrics}) and the manager's counters ({@link
 * ShuffleMetrics}).
 */
class ShuffleMetricsDocTest {
  private static final String CP = "shuffle-manager/target/classes:block-transfer/target/classes";

  @Test
  void docsShowTheGeneratedSparkTable() throws Exception {
    String doc = Files.readString(Paths.get("..", "docs", "METRICS.md"));
    String table = MemwireMetrics.table();
    assertTrue(
        doc.contains(table),
        "regenerate the Spark metrics table in docs/METRICS.md with: java -cp "
            + CP
            + " io.memwire.shuffle.metrics.MemwireMetrics\n"
            + table);
  }

  @Test
  void docsShowTheGeneratedManagerTable() throws Exception {
    String doc = Files.readString(Paths.get("..", "docs", "METRICS.md"));
    String table = ShuffleMetrics.table();
    assertTrue(
        doc.contains(table),
        "regenerate the manager counters table in docs/METRICS.md with: java -cp "
            + CP
            + " io.memwire.shuffle.ShuffleMetrics\n"
            + table);
  }

  @Test
  void tablesReadTheDeclarations() {
    // Hand-checked samples, so a generator bug cannot make docs and declarations agree on nonsense.
    String spark = MemwireMetrics.table();
    assertTrue(spark.startsWith("| metric | kind | unit | meaning |\n| --- | --- | --- | --- |\n"));
    assertTrue(
        spark.contains("| `oneSided.bytes` | counter | bytes | Block bytes delivered "), spark);
    assertTrue(
        spark.contains(
            "| `fallback.blocks.<cause>` | counter | count | Of those, by cause: `encryption`, "),
        spark);
    assertTrue(spark.contains("| `oneSided.blockSize.<bucket>.bytes` | counter | bytes | "), spark);
    assertTrue(
        spark.contains("| `connections.open` | gauge | count | Outgoing connections"), spark);
    assertTrue(spark.contains("| `transport.active` | gauge | 0 or 1 | "), spark);
    assertTrue(!spark.contains("fallback.blocks.read"), "a family is one row: " + spark);
    String manager = ShuffleMetrics.table();
    assertTrue(manager.contains("| `rdmaBytes` | counter | bytes | "), manager);
    assertTrue(manager.contains("| `firstBlockMicros` | counter | µs | "), manager);
    assertTrue(manager.contains("| `rdmaBlockSize.<bucket>.blocks` | counter | count | "), manager);
    assertTrue(manager.contains("| `directory.shuffles` | gauge | count | "), manager);
  }
}
