package io.memwire.shuffle.metrics;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.transfer.metrics.Metric;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * <p>Metric names in Spark's registry get Spark's prefix: {@code <namespace>.<executor
 * id>.plugin.io.memwire.shuffle.metrics.MemwireMetricsPlugin.<name>}.
 */
public final class MemwireMetricsPlugin implements SparkPlugin {
  /** How often an executor reports even when no task ends. */
  public static final Duration REPORT_INTERVAL = Duration.ofSeconds(10);

  /** How long the driver waits at stop for the final reports of executors still reporting. */
  static final Duration FINAL_REPORT_WAIT = Duration.ofSeconds(10);

  /** How long an executor waits for the driver to acknowledge its final report. */
  static final Duration FINAL_REPORT_ACK = Duration.ofSeconds(10);

  private static final Logger LOG = LoggerFactory.getLogger(MemwireMetricsPlugin.class);
  private static volatile Driver driver;

  @Override
  public DriverPlugin driverPlugin() {
    return new Driver();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Executor();
  }

  /**
   * The latest values each executor of this JVM's application reported, by executor id (executors
   * that have stopped keep their final values). Empty when the plugin does not run in this driver.
   */
  public static Map<String, Map<String, Long>> executorTotals() {
    Driver d = driver;
    return d == null ? Map.of() : d.valuesByExecutor();
  }

  /**
   * The latest report of each executor, by executor id: its values, how many tasks they include,
   * and whether it was the final one sent at the executor's shutdown.
   */
  public static Map<String, ExecutorReport> executorReports() {
    Driver d = driver;
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
    Driver d = driver;
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

  /** The driver side: collects reports, exposes totals, logs them at stop. */
  static final class Driver implements DriverPlugin {
    private final Map<String, ExecutorReport> reports = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> tasksEnded = new ConcurrentHashMap<>();
    private final Map<String, Boolean> removed = new ConcurrentHashMap<>();
    private final Object changed = new Object();
    private volatile SparkContext sc;
    private volatile String appId;

    @Override
    public Map<String, String> init(SparkContext sc, PluginContext ctx) {
      this.sc = sc;
      sc.addSparkListener(
          new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
              tasksEnded
                  .computeIfAbsent(end.taskInfo().executorId(), k -> new AtomicLong())
                  .incrementAndGet();
            }

            @Override
            public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
              removed.put(e.executorId(), Boolean.TRUE);
              synchronized (changed) {
                changed.notifyAll();
              }
            }
          });
      driver = this;
      return Map.of();
    }

    @Override
    public void registerMetrics(String appId, PluginContext ctx) {
      this.appId = appId;
      MetricRegistry registry = ctx.metricRegistry();
      for (Metric metric : MemwireMetrics.ALL) {
        String name = metric.name();
        registry.register(
            "total." + name, (Gauge<Long>) () -> applicationTotalsOf(valuesByExecutor()).get(name));
      }
    }

    private static Map<String, Long> applicationTotalsOf(Map<String, Map<String, Long>> m) {
      return MemwireMetrics.sum(m.values());
    }

    @Override
    public Object receive(Object message) {
      if (message instanceof ExecutorReport r) {
        reports.merge(r.executorId(), r, (old, now) -> now.sequence() > old.sequence() ? now : old);
        synchronized (changed) {
          changed.notifyAll();
        }
        // Only the final report is an ask (the executor waits for this reply); others are sends.
        return r.last() ? Boolean.TRUE : null;
      }
      throw new IllegalArgumentException("unexpected message " + message);
    }

    Map<String, Map<String, Long>> valuesByExecutor() {
      Map<String, Map<String, Long>> m = new TreeMap<>();
      reports.forEach((id, r) -> m.put(id, r.values()));
      return Collections.unmodifiableMap(m);
    }

    /** Executors whose latest report misses tasks the driver saw end, and are still alive. */
    private List<String> lagging() {
      List<String> behind = new ArrayList<>();
      tasksEnded.forEach(
          (id, n) -> {
            ExecutorReport r = reports.get(id);
            if (!removed.containsKey(id) && (r == null || r.tasksEnded() < n.get())) {
              behind.add(
                  id
                      + " (reported "
                      + (r == null ? "nothing" : r.tasksEnded() + " of " + n.get() + " tasks")
                      + ")");
            }
          });
      return behind;
    }

    Map<String, Map<String, Long>> awaitCurrent(long deadline)
        throws TimeoutException, InterruptedException {
      synchronized (changed) {
        while (true) {
          List<String> behind = lagging();
          if (behind.isEmpty()) {
            return valuesByExecutor();
          }
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            throw new TimeoutException(
                "Memwire metrics: executors "
                    + behind
                    + " did not report "
                    + "their latest tasks in time");
          }
          changed.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }
      }
    }

    @Override
    public void shutdown() {
      // Executors were told to stop before plugins shut down: give their final reports a moment.
      long deadline = System.nanoTime() + FINAL_REPORT_WAIT.toNanos();
      synchronized (changed) {
        while (reports.values().stream()
                .anyMatch(r -> !r.last() && !removed.containsKey(r.executorId()))
            && System.nanoTime() < deadline) {
          try {
            changed.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
        }
      }
      Map<String, Long> totals = applicationTotalsOf(valuesByExecutor());
      Map<String, Long> nonZero = new LinkedHashMap<>();
      totals.forEach(
          (k, v) -> {
            if (v != 0) {
              nonZero.put(k, v);
            }
          });
      long finals = reports.values().stream().filter(ExecutorReport::last).count();
      LOG.info(
          "Memwire shuffle totals of {}: {} executors reported ({} final): {}",
          appId,
          reports.size(),
          finals,
          nonZero);
    }
  }

  /** The executor side: gauges, histograms, reports to the driver. */
  static final class Executor implements ExecutorPlugin {
    private final AtomicLong sequence = new AtomicLong();
    private final AtomicLong tasksEnded = new AtomicLong();
    private final AtomicBoolean reportQueued = new AtomicBoolean();
    private ScheduledExecutorService reporter;
    private PluginContext ctx;
    private MetricRegistry registry;
    private final AtomicBoolean latenciesHooked = new AtomicBoolean();
    private volatile Map<String, Long> cached = Map.of();
    private volatile long cachedAt;

    @Override
    public void init(PluginContext ctx, Map<String, String> extraConf) {
      this.ctx = ctx;
      MetricRegistry registry = ctx.metricRegistry();
      for (Metric metric : MemwireMetrics.ALL) {
        String name = metric.name();
        registry.register(name, (Gauge<Long>) () -> values().get(name));
      }
      this.registry = registry;
      hookLatencies();
      reporter =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "memwire-metrics-report");
                t.setDaemon(true);
                return t;
              });
      long every = REPORT_INTERVAL.toMillis();
      var unused =
          reporter.scheduleWithFixedDelay(() -> report(false), every, every, TimeUnit.MILLISECONDS);
    }

    /**
     * Registers the per-peer latency histograms once the manager of this JVM exists (it may be
     * created after the plugins); later peers' histograms are registered as they appear.
     */
    private void hookLatencies() {
      RdmaShuffleManager m = RdmaShuffleManager.current();
      if (m == null || !latenciesHooked.compareAndSet(false, true)) {
        return;
      }
      m.readLatencies()
          .onHistogram(
              (peer, h) -> {
                try {
                  registry.register(
                      "readLatencyMicros." + peer.replaceAll("[^A-Za-z0-9_-]", "_"), h);
                } catch (IllegalArgumentException alreadyThere) {
                  // Registered by the other path of the race in onHistogram.
                }
              });
    }

    /** The values, computed at most every 100 ms however many gauges a sink reads. */
    private Map<String, Long> values() {
      long now = System.nanoTime();
      if (now - cachedAt > TimeUnit.MILLISECONDS.toNanos(100) || cached.isEmpty()) {
        cached = MemwireMetrics.snapshot();
        cachedAt = now;
      }
      return cached;
    }

    @Override
    public void onTaskSucceeded() {
      taskEnded();
    }

    @Override
    public void onTaskFailed(TaskFailedReason reason) {
      taskEnded();
    }

    private void taskEnded() {
      tasksEnded.incrementAndGet();
      // Tasks ending together share one report: at most one is queued.
      if (reportQueued.compareAndSet(false, true)) {
        try {
          reporter.execute(
              () -> {
                reportQueued.set(false);
                report(false);
              });
        } catch (RuntimeException stopped) {
          reportQueued.set(false);
        }
      }
    }

    private ExecutorReport build(boolean last) {
      long tasks = tasksEnded.get(); // read before the values, so they include those tasks
      return new ExecutorReport(
          ctx.executorID(),
          sequence.incrementAndGet(),
          tasks,
          last,
          new LinkedHashMap<>(MemwireMetrics.snapshot()));
    }

    private void report(boolean last) {
      hookLatencies();
      try {
        ctx.send(build(last));
      } catch (Exception e) {
        LOG.debug("Memwire metrics report to the driver failed", e);
      }
    }

    @Override
    public void shutdown() {
      if (reporter == null) {
        return;
      }
      Future<?> last =
          reporter.submit(
              () -> {
                try {
                  ctx.ask(build(true));
                } catch (Exception e) {
                  LOG.warn("final Memwire metrics report to the driver failed: {}", e.toString());
                }
              });
      try {
        last.get(FINAL_REPORT_ACK.toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException | ExecutionException e) {
        LOG.warn("final Memwire metrics report to the driver not acknowledged: {}", e.toString());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        reporter.shutdownNow();
        try {
          reporter.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }
}
