package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.conf.ShuffleConf;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
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

  private static List<Path> templates(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(".conf")).sorted().collect(Collectors.toList());
    }
  }

  @Test
  void spark35TemplatesAreTheSameModesWithTheJarOnBothClassPaths() throws Exception {
    Path dir = Paths.get("..", "conf-templates", "spark");
    List<Path> files = templates(dir.resolve("spark-3.5"));
    assertEquals(2, files.size(), "auto and service templates for Spark 3.5: " + files);
    for (Path f : files) {
      Map<String, String> conf = load(f);
      String jar = conf.get("spark.executor.extraClassPath");
      assertTrue(jar != null && jar.endsWith("-spark.jar"), f + ": executor class path");
      assertEquals(jar, conf.get("spark.driver.extraClassPath"), f + ": driver class path");
      // Apart from the class path, the same settings as the 4.x template of that mode.
      Map<String, String> spark4 = load(dir.resolve(f.getFileName()));
      conf.remove("spark.executor.extraClassPath");
      conf.remove("spark.driver.extraClassPath");
      assertEquals(spark4, conf, f + " against " + dir.resolve(f.getFileName()));
    }
  }

  @Test
  void templatesParseWithTheManagersOwnValidation() throws Exception {
    List<Path> files = templates(Paths.get("..", "conf-templates", "spark"));
    assertEquals(4, files.size(), "verbs, tcp, auto and service templates: " + files);
    for (Path f : files) {
      Map<String, String> conf = load(f);
      String mode = f.getFileName().toString().split("\\.")[1];
      assertEquals(RdmaShuffleManager.class.getName(), conf.get("spark.shuffle.manager"), f + "");
      if (mode.equals("service")) {
        assertTrue(MemwireShuffleDataIO.selectedIn(conf), f + ": service mode's plugin");
        // A released executor's files are gone: its blocks come from the node's service.
        assertEquals("false", conf.get("spark.shuffle.readHostLocalDisk"), f + "");
        assertEquals("false", conf.get("spark.dynamicAllocation.shuffleTracking.enabled"), f + "");
        mode = "auto";
      } else {
        // Spark's host-local disk reads stay on: cheaper than a transfer between executors of a
        // host.
        assertEquals(null, conf.get("spark.shuffle.readHostLocalDisk"), f + "");
      }
      assertEquals(
          io.memwire.shuffle.metrics.MemwireMetricsPlugin.class.getName(),
          conf.get("spark.plugins.defaultList"),
          f + ": metrics plugin");
      ShuffleConf parsed = ShuffleConf.parse(conf, null); // throws naming a bad key or value
      assertTrue(parsed.toString().length() > 0);
      assertEquals(mode, conf.get(ShuffleConf.PREFIX + "provider"), f + "");
    }
  }
}
