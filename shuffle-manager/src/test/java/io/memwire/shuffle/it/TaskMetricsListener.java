package io.memwire.shuffle.it;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.FetchFailed;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/** Sums what Spark itself reports about shuffle reads, and counts fetch failures. */
final class TaskMetricsListener extends SparkListener {
  final AtomicLong remoteBytesRead = new AtomicLong();
  final AtomicLong remoteBlocksFetched = new AtomicLong();
  final AtomicLong fetchWaitMs = new AtomicLong();
  final AtomicLong fetchFailures = new AtomicLong();

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    if (end.reason() instanceof FetchFailed) {
      fetchFailures.incrementAndGet();
    }
    if (end.taskMetrics() != null) {
      remoteBytesRead.addAndGet(end.taskMetrics().shuffleReadMetrics().remoteBytesRead());
      remoteBlocksFetched.addAndGet(end.taskMetrics().shuffleReadMetrics().remoteBlocksFetched());
      fetchWaitMs.addAndGet(end.taskMetrics().shuffleReadMetrics().fetchWaitTime());
    }
  }

  void reset() {
    remoteBytesRead.set(0);
    remoteBlocksFetched.set(0);
    fetchWaitMs.set(0);
    fetchFailures.set(0);
  }
}
