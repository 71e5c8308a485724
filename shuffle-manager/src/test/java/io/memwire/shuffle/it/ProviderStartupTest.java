package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.compat.SparkCompat;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

/**
 * provider=verbs on a machine without RDMA: executors refuse to start with an error naming the key.
 * (They register with the driver before the shuffle manager is built, so the error shows in the
 * executor's log, or in LocalSparkCluster's start-up error that quotes it.) On Spark 3.5 the
 * manager is built before SparkEnv and starts its transport at first use: there the executor comes
 * up and the first shuffle task fails with the same error, which aborts the job.
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
      if (SparkCompat.sparkVersion().startsWith("3.")) {
        JavaSparkContext jsc = cluster.javaSparkContext();
        SparkException e =
            assertThrows(
                SparkException.class,
                () ->
                    jsc.parallelize(List.of(1, 2, 3, 4), 2)
                        .mapToPair(x -> new Tuple2<>(x % 2, x))
                        .reduceByKey(Integer::sum)
                        .count());
        assertTrue(e.getMessage().contains(MESSAGE), e.getMessage());
        return;
      }
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
