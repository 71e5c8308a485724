package io.memwire.tpcds.worker;

import io.memwire.localcluster.SparkKeys;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.executor.ShuffleReadMetrics;
import org.apache.spark.executor.ShuffleWriteMetrics;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * Sums task metrics per job group through a {@link SparkListener}. A query runs under its own job
 * group; its stages are attributed to that group when their job starts. Listener events arrive
 * asynchronously, so {@link #measure} ends with a one-task sentinel job in a fresh group and waits
 * until the listener has seen it: every event posted before (all task ends of the query's finished
 * stages) has then been seen.
 */
public final class TaskMetricsCollector extends SparkListener {
  private static final String GROUP_PROPERTY = SparkKeys.JOB_GROUP_ID;

  private final Map<Integer, String> stageGroups = new ConcurrentHashMap<>();
  private final Map<String, ShuffleMetrics> totals = new ConcurrentHashMap<>();
  private final Map<String, CountDownLatch> sentinels = new ConcurrentHashMap<>();
  private final AtomicLong sequence = new AtomicLong();

  /** Registers a collector on {@code sc}. */
  public static TaskMetricsCollector register(SparkContext sc) {
    TaskMetricsCollector collector = new TaskMetricsCollector();
    sc.addSparkListener(collector);
    return collector;
  }

  /** Something to run and measure. */
  @FunctionalInterface
  public interface Action<T> {
    /** Runs the work. */
    T run() throws Exception;
  }

  /** The value of {@code action} plus the metrics of every task it ran. */
  public record Measured<T>(T value, ShuffleMetrics metrics) {}

  /**
   * Runs {@code action} on this thread under a fresh job group and returns its value with the
   * summed task metrics. Waits at most {@code timeoutMs} for the listener to catch up.
   */
  public <T> Measured<T> measure(SparkContext sc, String label, Action<T> action, long timeoutMs)
      throws Exception {
    String group = "memwire-" + sequence.incrementAndGet() + "-" + label;
    T value;
    sc.setJobGroup(group, label, false);
    try {
      value = action.run();
    } finally {
      sc.clearJobGroup();
    }
    String sentinel = group + "-sentinel";
    CountDownLatch seen = new CountDownLatch(1);
    sentinels.put(sentinel, seen);
    sc.setJobGroup(sentinel, "metrics barrier", false);
    try {
      JavaSparkContext.fromSparkContext(sc).parallelize(List.of(1), 1).count();
    } finally {
      sc.clearJobGroup();
    }
    if (!seen.await(timeoutMs, TimeUnit.MILLISECONDS)) {
      throw new TimeoutException(
          "Spark listener did not deliver events within " + timeoutMs + " ms");
    }
    sentinels.remove(sentinel);
    ShuffleMetrics metrics = totals.remove(group);
    stageGroups.values().removeIf(g -> g.equals(group));
    return new Measured<>(value, metrics == null ? ShuffleMetrics.ZERO : metrics);
  }

  @Override
  public void onJobStart(SparkListenerJobStart jobStart) {
    String group =
        jobStart.properties() == null ? null : jobStart.properties().getProperty(GROUP_PROPERTY);
    if (group == null) {
      return;
    }
    CountDownLatch sentinel = sentinels.get(group);
    if (sentinel != null) {
      sentinel.countDown();
      return;
    }
    scala.collection.Iterator<?> ids = stageIds(jobStart).iterator();
    while (ids.hasNext()) {
      stageGroups.put((Integer) ids.next(), group);
    }
  }

  /**
   * {@code jobStart.stageIds()}, called by name: it returns {@code scala.collection.Seq} on Scala
   * 2.12 builds of Spark and {@code scala.collection.immutable.Seq} on 2.13, two descriptors.
   */
  private static scala.collection.Iterable<?> stageIds(SparkListenerJobStart jobStart) {
    try {
      return (scala.collection.Iterable<?>)
          SparkListenerJobStart.class.getMethod("stageIds").invoke(jobStart);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot read the job's stage ids", e);
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd taskEnd) {
    String group = stageGroups.get(taskEnd.stageId());
    TaskMetrics m = taskEnd.taskMetrics();
    if (group == null || m == null) {
      return;
    }
    ShuffleReadMetrics r = m.shuffleReadMetrics();
    ShuffleWriteMetrics w = m.shuffleWriteMetrics();
    ShuffleMetrics one =
        new ShuffleMetrics(
            1,
            m.executorRunTime(),
            w.bytesWritten(),
            w.recordsWritten(),
            r.localBytesRead(),
            r.remoteBytesRead(),
            r.fetchWaitTime(),
            r.recordsRead(),
            r.localBlocksFetched(),
            r.remoteBlocksFetched(),
            m.executorCpuTime() / 1_000_000,
            m.jvmGCTime(),
            r.localBlocksFetched() + r.remoteBlocksFetched() > 0 ? m.executorRunTime() : 0);
    totals.merge(group, one, ShuffleMetrics::plus);
  }
}
