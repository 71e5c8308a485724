package io.memwire.shuffle.metrics;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.transfer.metrics.Metric;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor side of {@link MemwireMetricsPlugin}: gauges, per-peer latency histograms, reports
 * to the driver.
 */
final class MetricsExecutor implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(MemwireMetricsPlugin.class);

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
    FabricGauges.register(registry);
    hookLatencies();
    reporter =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "memwire-metrics-report");
              t.setDaemon(true);
              return t;
            });
    long every = MemwireMetricsPlugin.REPORT_INTERVAL.toMillis();
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
                registry.register("readLatencyMicros." + peer.replaceAll("[^A-Za-z0-9_-]", "_"), h);
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
      last.get(MemwireMetricsPlugin.FINAL_REPORT_ACK.toMillis(), TimeUnit.MILLISECONDS);
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
