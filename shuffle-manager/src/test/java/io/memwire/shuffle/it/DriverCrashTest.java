package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.service.ServiceConfig;
import io.memwire.shuffle.service.ServiceSettings;
import io.memwire.shuffle.service.ShuffleService;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A driver that crashes (SIGKILL, no shutdown hook, no Spark cleanup) leaves nothing behind in the
 * node's shuffle service: its outputs are deregistered and deleted once the driver's RPC port has
 * refused connections for {@code appTimeout}.
 */
class DriverCrashTest {
  @TempDir Path root;

  @Test
  void aCrashedDriversOutputsAreRemovedWithinTheAppTimeout() throws Exception {
    Duration appTimeout = Duration.ofSeconds(2);
    try (ShuffleService service =
        ShuffleService.start(
            ServiceConfig.fromProperties(
                Map.of(
                    ServiceSettings.PREFIX + "socket",
                    root.resolve("s/service.sock").toString(),
                    ServiceSettings.PREFIX + "dir",
                    root.resolve("outputs").toString(),
                    ServiceSettings.PREFIX + "appTimeout",
                    appTimeout.toMillis() + "ms",
                    ServiceSettings.TRANSFER_PREFIX + "provider",
                    "tcp",
                    ServiceSettings.TRANSFER_PREFIX + "bindAddress",
                    "127.0.0.1")))) {
      List<String> jvm = new ArrayList<>(List.of("-Xmx512m"));
      jvm.addAll(LocalSparkCluster.driverJvmOptions());
      ChildJvm driver =
          ChildJvm.start(
              jvm,
              CrashingDriver.class.getName(),
              List.of(service.socket().toString()),
              "READY ",
              root.resolve("driver.log"),
              Duration.ofSeconds(120));
      try {
        assertEquals("READY 101", driver.readyLine);
        Map<String, Long> held = service.stats();
        assertEquals(1L, held.get("applications"));
        assertEquals(4L, held.get("outputsHeld"), "the four map outputs went to the service");
      } finally {
        driver.kill(); // SIGKILL: the crash
      }
      long t0 = System.nanoTime();
      long deadline = t0 + appTimeout.plus(Duration.ofSeconds(15)).toNanos();
      while (service.stats().get("applications") != 0) {
        assertTrue(System.nanoTime() < deadline, "application not removed: " + service.stats());
        Thread.sleep(50);
      }
      Map<String, Long> after = service.stats();
      assertEquals(0L, after.get("outputsHeld"), after.toString());
      assertEquals(0L, after.get("bytesHeld"), after.toString());
      assertEquals(0L, after.get("directoryBytes"), after.toString());
      assertEquals(0L, after.get("node.registeredRegions"), after.toString());
      try (Stream<Path> files = Files.walk(root.resolve("outputs"))) {
        assertEquals(0, files.filter(Files::isRegularFile).count(), "no file left");
      }
    }
  }
}
