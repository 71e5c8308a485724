package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * provider=verbs on a machine without RDMA: executors refuse to start with an error naming the key.
 * (They register with the driver before the shuffle manager is built, so the error shows in the
 * executor's log, or in LocalSparkCluster's start-up error that quotes it.)
 */
class ProviderStartupTest {
  static final String MESSAGE =
      "spark.shuffle.rdma.provider=verbs but the verbs transport cannot start";

  @Test
  void verbsWithoutRdmaIsAClearStartupError(@TempDir Path work) throws Exception {
    LocalSparkCluster cluster = null;
    try {
      cluster =
          LocalSparkCluster.builder()
              .executors(1)
              .workDir(work)
              .startupTimeout(Duration.ofSeconds(60))
              .conf("spark.shuffle.manager", Clusters.MANAGER)
              .conf("spark.shuffle.rdma.provider", "verbs")
              .start();
    } catch (IllegalStateException e) {
      assertTrue(e.getMessage().contains(MESSAGE), e.getMessage());
      return;
    }
    try {
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!executorLogsContain(work, MESSAGE)) {
        assertTrue(System.nanoTime() < deadline, "no executor log says: " + MESSAGE);
        Thread.sleep(200);
      }
    } finally {
      cluster.close();
    }
  }

  private static boolean executorLogsContain(Path work, String text) throws IOException {
    try (Stream<Path> files = Files.walk(work)) {
      return files
          .filter(p -> p.getFileName().toString().equals("stderr"))
          .anyMatch(
              p -> {
                try {
                  return Files.readString(p).contains(text);
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              });
    }
  }
}
