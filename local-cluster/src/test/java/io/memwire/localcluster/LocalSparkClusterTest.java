package io.memwire.localcluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;

/**
 * Starts real clusters: one that runs a shuffle across two executor JVMs, one that cannot start.
 */
class LocalSparkClusterTest {
  private static final Logger LOG = LoggerFactory.getLogger(LocalSparkClusterTest.class);

  @Test
  void runsAShuffleAcrossTwoExecutorProcesses(@TempDir Path work) {
    try (LocalSparkCluster cluster =
        LocalSparkCluster.builder()
            .executors(2)
            .workDir(work)
            .startupTimeout(Duration.ofSeconds(120))
            .start()) {
      assertEquals(2, cluster.registeredExecutors());
      assertTrue(Files.isDirectory(cluster.sparkHome().resolve("jars")));
      JavaSparkContext jsc = cluster.javaSparkContext();

      // Tasks report their process id: two executor JVMs, neither of them this one.
      List<Long> pids =
          jsc.parallelize(IntStream.range(0, 8).boxed().collect(Collectors.toList()), 8)
              .map(i -> ProcessHandle.current().pid())
              .distinct()
              .collect();
      assertEquals(2, pids.size(), "tasks ran in " + pids);
      assertFalse(pids.contains(ProcessHandle.current().pid()));

      // Executors run the driver's Spark: the one the test classpath holds (-Dspark.runtime.version
      // swaps it).
      String driverVersion = org.apache.spark.package$.MODULE$.SPARK_VERSION();
      List<String> executorVersions =
          jsc.parallelize(List.of(1, 2, 3, 4), 4)
              .map(i -> org.apache.spark.package$.MODULE$.SPARK_VERSION())
              .distinct()
              .collect();
      LOG.info("Spark version: driver {}, executors {}", driverVersion, executorVersions);
      assertEquals(List.of(driverVersion), executorVersions);
      String wanted = System.getProperty("memwire.test.sparkVersion");
      if (wanted != null) {
        assertEquals(wanted, driverVersion, "Spark on the test classpath");
      }

      List<Integer> data = IntStream.range(0, 10_000).boxed().collect(Collectors.toList());
      Map<Integer, Long> expected = new HashMap<>();
      for (int x : data) {
        expected.merge(x % 97, (long) x, Long::sum);
      }
      JavaPairRDD<Integer, Long> sums =
          jsc.parallelize(data, 6)
              .mapToPair(x -> new Tuple2<>(x % 97, (long) x))
              .reduceByKey(Long::sum, 5);
      Map<Integer, Long> actual = new HashMap<>(sums.collectAsMap());
      assertEquals(expected, actual);
    }
  }

  @Test
  void executorsThatCannotStartFailWithinTheDeadline(@TempDir Path work) {
    long t0 = System.nanoTime();
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () ->
                LocalSparkCluster.builder()
                    .executors(1)
                    .workDir(work)
                    .conf(
                        "spark.executor.extraJavaOptions",
                        "-javaagent:/nonexistent/memwire-agent.jar")
                    .startupTimeout(Duration.ofSeconds(15))
                    .start()
                    .close());
    long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
    assertTrue(e.getMessage().contains("0 of 1 executors registered"), e.getMessage());
    assertTrue(
        e.getMessage().contains("memwire-agent.jar"), "stderr tail expected: " + e.getMessage());
    assertTrue(seconds < 60, "took " + seconds + " s");
  }

  @Test
  void driverOptionsOpenJavaUtil() {
    List<String> opts = new ArrayList<>(LocalSparkCluster.driverJvmOptions());
    assertTrue(opts.contains("--add-opens=java.base/java.util=ALL-UNNAMED"), opts.toString());
    assertTrue(opts.contains("--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"), opts.toString());
  }
}
