package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The configurations the main job compares, as named on its command line. */
class ConfigurationTest {
  @Test
  void configurationsAreValidated() {
    Path jar = Paths.get("memwire.jar");
    assertEquals(
        List.of("spark-sort-hostlocal", "memwire-tcp"),
        Configuration.parse("spark-sort-hostlocal,memwire", "tcp", jar, List.of()).stream()
            .map(Configuration::name)
            .toList());
    assertTrue(
        Configuration.parse("spark-sort,memwire-hostlocal", "tcp", jar, List.of())
            .get(1)
            .args()
            .contains("spark.shuffle.readHostLocalDisk=true"));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Configuration.parse("memwire,spark-sort", "tcp", jar, List.of()));
    assertTrue(e.getMessage().contains("reference"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Configuration.parse("spark-sort,netty", "tcp", jar, List.of()));
    assertTrue(e.getMessage().contains("unknown configuration 'netty'"), e.getMessage());
  }

  @Test
  void providersAreNamedPerConfiguration(@TempDir Path dir) throws Exception {
    Path jar = Paths.get("memwire.jar");
    List<Path> ucx =
        List.of(
            Files.createFile(dir.resolve("ucx.jar")), Files.createFile(dir.resolve("jucx.jar")));
    List<Configuration> cs =
        Configuration.parse("spark-sort,memwire-tcp,memwire-ucx-hostlocal", "verbs", jar, ucx);
    assertEquals(
        List.of("spark-sort", "memwire-tcp", "memwire-ucx-hostlocal"),
        cs.stream().map(Configuration::name).toList());
    assertTrue(
        cs.get(1).args().contains("spark.shuffle.rdma.provider=tcp"), cs.get(1).args()::toString);
    List<String> overUcx = cs.get(2).args();
    assertTrue(overUcx.contains("spark.shuffle.rdma.provider=ucx"), overUcx::toString);
    assertTrue(overUcx.contains("spark.executorEnv.UCX_ERROR_SIGNALS="), overUcx::toString);
    String classPath =
        overUcx.stream()
            .filter(a -> a.startsWith("spark.executor.extraClassPath="))
            .findFirst()
            .orElseThrow();
    assertTrue(
        classPath.endsWith(
            jar.toAbsolutePath()
                + java.io.File.pathSeparator
                + ucx.get(0).toAbsolutePath()
                + java.io.File.pathSeparator
                + ucx.get(1).toAbsolutePath()),
        classPath);
    assertFalse(cs.get(1).args().stream().anyMatch(a -> a.contains("UCX_ERROR_SIGNALS")));
    assertFalse(cs.get(1).args().stream().anyMatch(a -> a.contains("verifyBlocks")));
    Configuration unverified =
        Configuration.parse("spark-sort,memwire-tcp-unverified", "ucx", jar, List.of()).get(1);
    assertEquals("memwire-tcp-unverified", unverified.name());
    assertTrue(
        unverified.args().contains("spark.shuffle.rdma.verifyBlocks=false"),
        unverified.args()::toString);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Configuration.parse("spark-sort,memwire-ucx", "tcp", jar, List.of()));
    assertTrue(e.getMessage().contains("needs --ucx-jars"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                Configuration.parse(
                    "spark-sort,memwire", "ucx", jar, List.of(dir.resolve("gone.jar"))));
    assertTrue(e.getMessage().startsWith("--ucx-jars: missing "), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Configuration.parse("spark-sort,memwire-rdma", "tcp", jar, List.of()));
    assertTrue(e.getMessage().contains("unknown configuration 'memwire-rdma'"), e.getMessage());
  }
}
