package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import io.memwire.transfer.metrics.Metric;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * A cluster with Spark's AES network encryption on (which needs spark.authenticate and a secret)
 * and Memwire's metrics plugin with Spark's CSV sink, running a few {@link ShuffleJobs}: one
 * cluster per subclass, shared by its tests.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class WireEncryptionTestBase {
  /** Jobs with plain, batch-fetched and DataFrame shuffles (a few, to keep the test short). */
  static final List<String> JOBS = List.of("reduceByKey", "groupByKey", "dataFrameJoin");

  LocalSparkCluster cluster;
  TaskMetricsListener listener;
  Map<String, List<String>> expected;

  /** Where Spark's CSV sink writes (driver and executors: all on this host). */
  Path csvDir;

  /** Settings added to the encrypted cluster's. */
  abstract Map<String, String> variant();

  @BeforeAll
  void startCluster() throws IOException {
    csvDir = Files.createTempDirectory("memwire-metrics-csv");
    expected = Reference.results();
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put("spark.authenticate", "true");
    conf.put("spark.authenticate.secret", "memwire-wire-encryption-test");
    conf.put("spark.network.crypto.enabled", "true");
    conf.put("spark.plugins", MemwireMetricsPlugin.class.getName());
    conf.put("spark.metrics.conf.*.sink.csv.class", "org.apache.spark.metrics.sink.CsvSink");
    conf.put("spark.metrics.conf.*.sink.csv.period", "1");
    conf.put("spark.metrics.conf.*.sink.csv.unit", "seconds");
    conf.put("spark.metrics.conf.*.sink.csv.directory", csvDir.toString());
    conf.putAll(variant());
    cluster = Clusters.start(Clusters.MANAGER, conf);
    listener = new TaskMetricsListener();
    cluster.sparkContext().addSparkListener(listener);
  }

  @AfterAll
  void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
    if (csvDir != null) {
      try (Stream<Path> files = Files.walk(csvDir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        // Left in the temp directory.
      }
    }
  }

  /** What one job did: executor counters before and after, Spark's remote bytes. */
  record Run(
      String job,
      Map<String, Map<String, Long>> before,
      Map<String, Map<String, Long>> after,
      long sparkRemoteBytes) {
    long delta(Metric metric) {
      return Clusters.sum(after, metric) - Clusters.sum(before, metric);
    }
  }

  /** Runs {@link #JOBS}, asserting each one's results equal Spark's sort shuffle's. */
  List<Run> runJobs() throws Exception {
    Map<String, Function<SparkSession, List<String>>> all = ShuffleJobs.all(false);
    List<Run> runs = new java.util.ArrayList<>();
    for (String name : JOBS) {
      var before = Clusters.executorStats(cluster.javaSparkContext(), 2);
      listener.reset();
      List<String> actual = all.get(name).apply(cluster.session());
      cluster.sparkContext().listenerBus().waitUntilEmpty(10_000);
      var after = Clusters.executorStats(cluster.javaSparkContext(), 2);
      assertEquals(expected.get(name), actual, name + ": results differ from SortShuffleManager's");
      assertEquals(0, listener.fetchFailures.get(), name + ": fetch failures");
      assertTrue(listener.remoteBytesRead.get() > 0, name + ": no remote bytes at all");
      runs.add(new Run(name, before, after, listener.remoteBytesRead.get()));
    }
    return runs;
  }
}
