package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The configurations the main job compares, as named on its command line. */
class ConfigurationTest {
  @Test
  void configurationsAreValidated() {
    Path jar = Paths.get("memwire.jar");
    assertEquals(
        List.of("spark-sort-hostlocal", "memwire-tcp"),
        Configuration.parse("spark-sort-hostlocal,memwire", "tcp", jar).stream()
            .map(Configuration::name)
            .toList());
    assertTrue(
        Configuration.parse("spark-sort,memwire-hostlocal", "tcp", jar)
            .get(1)
            .args()
            .contains("spark.shuffle.readHostLocalDisk=true"));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Configuration.parse("memwire,spark-sort", "tcp", jar));
    assertTrue(e.getMessage().contains("reference"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Configuration.parse("spark-sort,netty", "tcp", jar));
    assertTrue(e.getMessage().contains("unknown configuration 'netty'"), e.getMessage());
  }
}
