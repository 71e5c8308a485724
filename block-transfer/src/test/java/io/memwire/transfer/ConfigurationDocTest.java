package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.settings.TransportSettings;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/**
 * docs/CONFIGURATION.md shows exactly the tables generated from the transport's setting
 * declarations (keys and JVM system properties).
 */
class ConfigurationDocTest {
  private static final String REGENERATE =
      "regenerate the tables in docs/CONFIGURATION.md with: "
          + "java -cp block-transfer/target/classes io.memwire.transfer.settings.TransportSettings\n";

  private static String doc() throws Exception {
    return Files.readString(Paths.get("..", "docs", "CONFIGURATION.md"));
  }

  @Test
  void docsShowTheGeneratedKeyTable() throws Exception {
    String table = TransportSettings.keyTable();
    assertTrue(doc().contains(table), REGENERATE + table);
  }

  @Test
  void docsShowTheGeneratedSystemPropertyTable() throws Exception {
    String table = TransportSettings.systemPropertyTable();
    assertTrue(doc().contains(table), REGENERATE + table);
    assertTrue(table.contains("| `memwire.tcp.sendfileMinBytes` | 256k | 0 to 2g-1 |"), table);
    assertTrue(table.contains("| `memwire.verbs.cqSpinMicros` | 50 | 0 to 1000000 |"), table);
    assertTrue(
        table.contains("| `memwire.verbs.cqEntries` | max_cqe, at most 65536 | 1 to 4194304 |"),
        table);
    assertTrue(table.contains("| `memwire.verbs.maxCompletionQueues` | 64 | 1 to 1024 |"), table);
    assertTrue(
        table.contains("| `memwire.memory.allocationStacks` | false | true, false |"), table);
  }

  @Test
  void everyKeyIsInTheConfigurationTable() throws Exception {
    String text = doc();
    for (TransferConfig.Key k : TransferConfig.KEYS.values()) {
      String row = "| `" + k.name() + "` | " + k.defaultValue() + " | " + k.range() + " | ";
      assertTrue(text.contains(row), "docs/CONFIGURATION.md lacks or misstates: " + row);
    }
  }

  @Test
  void tableGeneratorReadsTheDeclarations() {
    // A hand-checked sample, so a formatter bug cannot make docs and generator agree on nonsense.
    String t = TransportSettings.keyTable();
    assertTrue(t.contains("| `ioThreads` | 2 | 1 to 64 | "), t);
    assertTrue(t.contains("| `maxSegmentSize` | 1g | 4k to 2g-1 | "), t);
    assertTrue(t.contains("| `idleTimeout` | 10min | 1s to 24h | "), t);
    assertTrue(t.contains("| `peerBackoff` | 5s | 0 to 10min; 0 = off | "), t);
    assertTrue(t.contains("| `connectionIdleTimeout` | 5min | 0 to 24h; 0 = never | "), t);
    assertTrue(t.contains("| `registrationBudget` | 16g | 1m to 1p | "), t);
  }
}
