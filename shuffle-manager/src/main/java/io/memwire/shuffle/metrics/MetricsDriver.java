package io.memwire.shuffle.metrics;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.memwire.transfer.metrics.Metric;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver side of {@link MemwireMetricsPlugin}: collects the executors' reports, registers their
 * totals, logs them at stop, and answers the plugin's static queries.
 */
final class MetricsDriver implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(MemwireMetricsPlugin.class);

  final Map<String, ExecutorReport> reports = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> tasksEnded = new ConcurrentHashMap<>();
  private final Map<String, Boolean> removed = new ConcurrentHashMap<>();
  private final Object changed = new Object();
  volatile SparkContext sc;
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
    MemwireMetricsPlugin.driver = this;
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
    long deadline = System.nanoTime() + MemwireMetricsPlugin.FINAL_REPORT_WAIT.toNanos();
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
