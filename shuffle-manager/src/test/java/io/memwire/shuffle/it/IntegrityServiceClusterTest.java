package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link IntegrityClusterTest} in service mode: the service holds hard links of the executors'
 * files (the same inodes, so the flipped bytes are what it serves) and publishes the checksums the
 * executors name; reducers check its blocks the same way.
 */
class IntegrityServiceClusterTest extends IntegrityClusterTest {
  @TempDir static Path root;
  ServiceProcess service;

  @Override
  Map<String, String> extraConf() throws IOException {
    service = ServiceProcess.start(root.resolve("service"), Map.of());
    return Map.of(
        MemwireShuffleDataIO.PLUGIN_KEY,
        MemwireShuffleDataIO.CLASS_NAME,
        "spark.shuffle.rdma.service.socket",
        service.socket().toString());
  }

  @Override
  void checkAfterJob() {
    Map<String, Long> st = service.stats();
    assertTrue(st.getOrDefault("outputsWithChecksums", 0L) > 0, st.toString());
  }

  @Override
  @AfterAll
  void stop() throws InterruptedException {
    try {
      super.stop();
    } finally {
      if (service != null) {
        service.close();
      }
    }
  }
}
