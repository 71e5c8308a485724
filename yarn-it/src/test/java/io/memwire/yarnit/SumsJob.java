package io.memwire.yarnit;

import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * The YARN tests' job and its settings: values {@code i * 7} summed by {@code value % KEYS} over
 * {@link #MAPS} maps and {@link #REDUCERS} reducers, run under Memwire's service mode on YARN and,
 * as the reference, under Spark's own sort shuffle.
 */
final class SumsJob {
  static final int RECORDS = 40_000;
  static final int KEYS = 997;
  static final int MAPS = 6;
  static final int REDUCERS = 4;

  private SumsJob() {}

  /** The job's RDD. */
  static JavaPairRDD<Integer, Long> sums(JavaSparkContext sc) {
    List<Integer> data = IntStream.range(0, RECORDS).map(i -> i * 7).boxed().toList();
    return sc.parallelize(data, MAPS)
        .mapToPair(x -> new Tuple2<>(x % KEYS, (long) x))
        .reduceByKey(Long::sum, REDUCERS);
  }

  /** The job's result. */
  static Map<Integer, Long> collect(JavaPairRDD<Integer, Long> rdd) {
    return new HashMap<>(rdd.collectAsMap());
  }

  /** The job under Spark's own SortShuffleManager, in a local driver of this JVM. */
  static Map<Integer, Long> underSortShuffle() {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("sort-shuffle-reference")
            .set("spark.shuffle.manager", "sort")
            .set("spark.ui.enabled", "false");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      return collect(sums(sc));
    }
  }

  /**
   * A client-mode application on the cluster with Memwire's service mode: outputs to the aux
   * service's {@code socket}, tcp, no fallback (a block not read one-sided fails the task), the
   * metrics plugin, up to 2 executors released after 3 s idle.
   */
  static SparkConf serviceModeConf(
      String name, Map<String, String> hadoopConf, Path staging, Path socket) {
    SparkConf conf = SparkOnYarn.clientMode(name, hadoopConf, staging);
    return conf.set("spark.shuffle.manager", "io.memwire.shuffle.RdmaShuffleManager")
        .set("spark.shuffle.sort.io.plugin.class", "io.memwire.shuffle.dataio.MemwireShuffleDataIO")
        .set("spark.shuffle.rdma.service.socket", socket.toString())
        .set("spark.shuffle.rdma.provider", "tcp")
        .set("spark.shuffle.rdma.fallback", "false")
        .set("spark.plugins", MemwireMetricsPlugin.class.getName())
        .set("spark.executor.extraJavaOptions", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED")
        .set("spark.dynamicAllocation.enabled", "true")
        .set("spark.dynamicAllocation.shuffleTracking.enabled", "false")
        .set("spark.dynamicAllocation.executorIdleTimeout", "3s")
        .set("spark.dynamicAllocation.schedulerBacklogTimeout", "1s")
        .set("spark.dynamicAllocation.minExecutors", "0")
        .set("spark.dynamicAllocation.initialExecutors", "2")
        .set("spark.dynamicAllocation.maxExecutors", "2");
  }

  /** The Memwire counters of every executor so far, once each executor reported. */
  static Map<String, Long> memwireTotals(JavaSparkContext jsc) throws Exception {
    MemwireMetricsPlugin.awaitExecutorTotals(jsc.sc(), Duration.ofSeconds(60));
    return MemwireMetricsPlugin.applicationTotals();
  }

  /**
   * Stops the application, waits until YARN's ResourceManager {@code rm} has it FINISHED and the
   * NodeManager's service (its counters from {@code serviceStats}) ended it on stopApplication;
   * returns the service's counters then.
   */
  static Map<String, Long> stopAndAwaitEnded(
      JavaSparkContext jsc,
      org.apache.hadoop.yarn.server.resourcemanager.ResourceManager rm,
      java.util.function.Supplier<Map<String, Long>> serviceStats)
      throws InterruptedException {
    org.apache.hadoop.yarn.api.records.ApplicationId app =
        org.apache.hadoop.yarn.api.records.ApplicationId.fromString(jsc.sc().applicationId());
    jsc.stop();
    Waits.until(
        Duration.ofSeconds(180),
        () ->
            rm.getRMContext().getRMApps().get(app).getState()
                == org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState.FINISHED,
        () -> app + " finished in YARN");
    Waits.until(
        Duration.ofSeconds(60),
        () -> serviceStats.get().get("applications") == 0,
        () -> "the service ended " + app + " on stopApplication: " + serviceStats.get());
    return serviceStats.get();
  }

  /** How much {@code key} grew from {@code before} to {@code after}. */
  static long delta(Map<String, Long> before, Map<String, Long> after, String key) {
    return after.getOrDefault(key, 0L) - before.getOrDefault(key, 0L);
  }
}
