package io.memwire.shuffle.metrics;

import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeoutException;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Puts Memwire's shuffle metrics into Spark's metrics system, so they reach the sinks a cluster
 * already runs (JMX, Prometheus servlet, CSV, Graphite). Enable with {@code --conf
 * spark.plugins=io.memwire.shuffle.metrics.MemwireMetricsPlugin}.
 *
 * <ul>
 *   <li>Each executor registers every {@link MemwireMetrics} name as a gauge, plus one histogram of
 *       one-sided read latency per peer executor ({@code readLatencyMicros.<executor id>}, at most
 *       {@link io.memwire.shuffle.PeerReadLatencies#MAX_PEERS} plus {@code other}).
 *   <li>Each executor reports its values to the driver after every task it ends, every {@link
 *       #REPORT_INTERVAL} and, waiting for the driver's reply, when it shuts down. The shutdown
 *       report is best effort (an executor may be killed first); the reports sent after its tasks
 *       already carry every shuffle counter, which changes only while tasks run.
 *   <li>The driver registers {@code total.<name>} gauges (the sum over executors), logs one line
 *       with the application's totals when it stops, and offers them to programs: {@link
 *       #executorTotals()}, {@link #applicationTotals()} and {@link #awaitExecutorTotals}.
 * </ul>
 *
 * <p>The two sides are {@link MetricsDriver} and {@link MetricsExecutor}. Metric names in Spark's
 * registry get Spark's prefix: {@code <namespace>.<executor
 * id>.plugin.io.memwire.shuffle.metrics.MemwireMetricsPlugin.<name>}.
 */
public final class MemwireMetricsPlugin implements SparkPlugin {
  /** How often an executor reports even when no task ends. */
  public static final Duration REPORT_INTERVAL = Duration.ofSeconds(10);

  /** How long the driver waits at stop for the final reports of executors still reporting. */
  static final Duration FINAL_REPORT_WAIT = Duration.ofSeconds(10);

  /** How long an executor waits for the driver to acknowledge its final report. */
  static final Duration FINAL_REPORT_ACK = Duration.ofSeconds(10);

  /** This JVM's driver side, once Spark initialized it. */
  static volatile MetricsDriver driver;

  @Override
  public DriverPlugin driverPlugin() {
    return new MetricsDriver();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new MetricsExecutor();
  }

  /**
   * The latest values each executor of this JVM's application reported, by executor id (executors
   * that have stopped keep their final values). Empty when the plugin does not run in this driver.
   */
  public static Map<String, Map<String, Long>> executorTotals() {
    MetricsDriver d = driver;
    return d == null ? Map.of() : d.valuesByExecutor();
  }

  /**
   * The latest report of each executor, by executor id: its values, how many tasks they include,
   * and whether it was the final one sent at the executor's shutdown.
   */
  public static Map<String, ExecutorReport> executorReports() {
    MetricsDriver d = driver;
    return d == null ? Map.of() : Collections.unmodifiableMap(new TreeMap<>(d.reports));
  }

  /** {@link #executorTotals()} summed over executors, by metric name. */
  public static Map<String, Long> applicationTotals() {
    return MemwireMetrics.sum(executorTotals().values());
  }

  /**
   * Waits until every live executor that ran tasks of this application has reported values that
   * include all tasks the driver has seen it end, then returns {@link #executorTotals()}. Call it
   * after a job returns to check which path carried its bytes.
   *
   * @throws IllegalStateException when the plugin does not run in {@code sc}'s driver
   * @throws TimeoutException naming the executors whose reports lag when {@code timeout} passes
   */
  public static Map<String, Map<String, Long>> awaitExecutorTotals(
      SparkContext sc, Duration timeout) throws TimeoutException, InterruptedException {
    MetricsDriver d = driver;
    if (d == null || d.sc != sc) {
      throw new IllegalStateException(
          "the Memwire metrics plugin does not run in this driver: "
              + "add spark.plugins="
              + MemwireMetricsPlugin.class.getName());
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    // Task ends reach our listener through Spark's listener bus: let it catch up first.
    sc.listenerBus().waitUntilEmpty(Math.max(1, timeout.toMillis()));
    return d.awaitCurrent(deadline);
  }
}
