package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.conf.ShuffleConf;
import io.memwire.shuffle.conf.ShuffleSettings;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.Setting;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** docs/SHUFFLE.md shows exactly the table ShuffleSettings.KEYS generates, and its ranges hold. */
class ShuffleConfDocTest {
  @Test
  void docsShowTheGeneratedTable() throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "SHUFFLE.md"));
    assertTrue(
        doc.contains(ShuffleSettings.markdownTable()),
        "regenerate the table in docs/SHUFFLE.md with: java -cp ... "
            + "io.memwire.shuffle.conf.ShuffleConf\n"
            + ShuffleSettings.markdownTable());
  }

  @Test
  void theManagersOwnRangesAreWhatParsingEnforces() {
    String p = ShuffleConf.PREFIX;
    for (Setting<?> s : ShuffleSettings.OWN) {
      if (s.name().equals(ShuffleSettings.SERVICE_USER)) {
        // A list of user names: trimmed; one with no name is refused naming the key.
        assertEquals(
            java.util.Set.of("yarn", "root"),
            ShuffleConf.parse(Map.of(p + s.name(), " yarn, root "), null).serviceUsers());
        assertTrue(bad(p + s.name(), " , ").contains(p + s.name()));
        continue;
      }
      if (s.min().isEmpty() && !s.rangeText().equals("true, false")) {
        // The one other free-form value, a path: taken as given.
        assertEquals(ShuffleSettings.SERVICE_SOCKET, s.name());
        assertEquals(
            java.nio.file.Path.of("/x/y.sock"),
            ShuffleConf.parse(Map.of(p + s.name(), "/x/y.sock"), null).serviceSocket());
        continue;
      }
      if (s.min().isEmpty()) {
        assertEquals("true, false", s.rangeText(), s.name());
        ShuffleConf.parse(Map.of(p + s.name(), "true"), null);
        ShuffleConf.parse(Map.of(p + s.name(), "False"), null);
        assertTrue(bad(p + s.name(), "yes").contains(p + s.name() + "=yes is not true or false"));
        continue;
      }
      // The documented range text, read back with the unit parser.
      String[] ends = s.rangeText().split(";")[0].split(" to ");
      boolean duration = s.defaultValue() instanceof java.time.Duration;
      long min = duration ? s.min().getAsLong() : TransferConfig.parseBytes(ends[0]);
      long max = duration ? s.max().getAsLong() : TransferConfig.parseBytes(ends[1]);
      ShuffleConf.parse(Map.of(p + s.name(), Long.toString(min)), null);
      ShuffleConf.parse(Map.of(p + s.name(), Long.toString(max)), null);
      for (long v : new long[] {min - 1, max + 1}) {
        String msg = bad(p + s.name(), Long.toString(v));
        assertTrue(
            msg.contains(p + s.name() + "=" + v + " is out of range: " + s.rangeText()), msg);
      }
    }
    ShuffleConf c =
        ShuffleConf.parse(
            Map.of(
                p + "readBatchBlocks",
                "65536",
                p + "readBatchBytes",
                "64k",
                p + "indexCacheSize",
                "0"),
            null);
    assertEquals(65536, c.readBatchBlocks());
    assertEquals(64 * 1024, c.readBatchBytes());
    assertEquals(0, c.indexCacheSize());
    ShuffleConf d = ShuffleConf.parse(Map.of(), null);
    assertEquals(512, d.readBatchBlocks());
    assertEquals(64L << 20, d.readBatchBytes());
    assertEquals(64L << 20, d.indexCacheSize());
    assertTrue(d.fallback() && !d.allowCleartextReads());
    assertEquals(
        new java.util.TreeSet<>(java.util.List.of("root", System.getProperty("user.name"))),
        d.serviceUsers(),
        "default");
  }

  @Test
  void transportKeysAreCheckedByTheTransportAndUnknownKeysRefused() {
    String p = ShuffleConf.PREFIX;
    assertTrue(bad(p + "ioThreads", "65").contains(p + "ioThreads=65 is out of range: 1 to 64"));
    assertTrue(
        bad(p + "readBatchBlock", "5")
            .contains("unknown configuration key " + p + "readBatchBlock"));
  }

  private static String bad(String key, String value) {
    return assertThrows(
            TransferConfigException.class, () -> ShuffleConf.parse(Map.of(key, value), null))
        .getMessage();
  }
}
