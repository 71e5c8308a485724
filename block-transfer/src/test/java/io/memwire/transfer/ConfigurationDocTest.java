package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/** docs/CONFIGURATION.md lists every transport key with the default and range the code uses. */
class ConfigurationDocTest {
  @Test
  void everyKeyIsInTheConfigurationTable() throws Exception {
    Path doc = Paths.get("..", "docs", "CONFIGURATION.md");
    String text = Files.readString(doc);
    for (TransferConfig.Key k : TransferConfig.KEYS.values()) {
      String row = "| `" + k.name() + "` | " + k.defaultValue() + " | " + k.range() + " | ";
      assertTrue(text.contains(row), "docs/CONFIGURATION.md lacks or misstates: " + row);
    }
  }
}
