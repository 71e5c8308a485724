package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.conf.ShuffleConf;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Every shipped spark-defaults template names this manager and only valid Memwire keys. */
class SparkConfTemplatesTest {
  private static Map<String, String> load(Path file) throws Exception {
    Map<String, String> conf = new LinkedHashMap<>();
    for (String line : Files.readAllLines(file)) {
      String t = line.trim();
      if (t.isEmpty() || t.startsWith("#")) {
        continue;
      }
      String[] kv = t.split("\\s+", 2);
      conf.put(kv[0], kv.length > 1 ? kv[1] : "");
    }
    return conf;
  }

  @Test
  void templatesParseWithTheManagersOwnValidation() throws Exception {
    List<Path> files;
    try (Stream<Path> s = Files.list(Paths.get("..", "conf-templates", "spark"))) {
      files = s.filter(p -> p.toString().endsWith(".conf")).sorted().collect(Collectors.toList());
    }
    assertEquals(3, files.size(), "verbs, tcp and auto templates: " + files);
    for (Path f : files) {
      Map<String, String> conf = load(f);
      assertEquals(RdmaShuffleManager.class.getName(), conf.get("spark.shuffle.manager"), f + "");
      // Spark's host-local disk reads stay on: cheaper than a transfer between executors of a host.
      assertEquals(null, conf.get("spark.shuffle.readHostLocalDisk"), f + "");
      assertEquals(
          io.memwire.shuffle.metrics.MemwireMetricsPlugin.class.getName(),
          conf.get("spark.plugins.defaultList"),
          f + ": metrics plugin");
      ShuffleConf parsed = ShuffleConf.parse(conf, null); // throws naming a bad key or value
      assertTrue(parsed.toString().length() > 0);
      String mode = f.getFileName().toString().split("\\.")[1];
      assertEquals(mode, conf.get(ShuffleConf.PREFIX + "provider"), f + "");
    }
  }
}
