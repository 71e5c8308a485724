package io.memwire.yarnit;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.FetchFailed;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * What the driver saw of the jobs since the last {@link #reset}: stages submitted and rerun, fetch
 * failures, and the remote shuffle bytes Spark itself counted.
 */
final class ShuffleRuns extends SparkListener {
  final AtomicInteger stagesSubmitted = new AtomicInteger();
  final AtomicInteger stageReruns = new AtomicInteger();
  final AtomicInteger fetchFailures = new AtomicInteger();
  final AtomicLong remoteBytesRead = new AtomicLong();

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted s) {
    stagesSubmitted.incrementAndGet();
    if (s.stageInfo().attemptNumber() > 0) {
      stageReruns.incrementAndGet();
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    if (end.reason() instanceof FetchFailed) {
      fetchFailures.incrementAndGet();
    }
    if (end.taskMetrics() != null) {
      remoteBytesRead.addAndGet(end.taskMetrics().shuffleReadMetrics().remoteBytesRead());
    }
  }

  void reset() {
    stagesSubmitted.set(0);
    stageReruns.set(0);
    fetchFailures.set(0);
    remoteBytesRead.set(0);
  }

  @Override
  public String toString() {
    return "stages "
        + stagesSubmitted
        + ", reruns "
        + stageReruns
        + ", fetch failures "
        + fetchFailures
        + ", remote bytes "
        + remoteBytesRead;
  }
}
