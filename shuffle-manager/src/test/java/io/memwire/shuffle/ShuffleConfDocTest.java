package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.conf.ShuffleConf;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** docs/SHUFFLE.md shows exactly the table ShuffleConf.KEYS generates. */
class ShuffleConfDocTest {
  @Test
  void docsShowTheGeneratedTable() throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "SHUFFLE.md"));
    assertTrue(doc.contains(ShuffleConf.markdownTable()),
        "regenerate the table in docs/SHUFFLE.md with: java -cp ... "
            + "io.memwire.shuffle.conf.ShuffleConf\n" + ShuffleConf.markdownTable());
  }
}
