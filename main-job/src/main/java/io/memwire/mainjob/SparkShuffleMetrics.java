package io.memwire.mainjob;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.executor.ShuffleReadMetrics;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * Spark's shuffle metrics summed over all tasks of the application, from a listener on the driver;
 * {@link Phase#measure} takes the difference of two snapshots.
 */
final class SparkShuffleMetrics extends SparkListener {
  final AtomicLong remoteBytes = new AtomicLong();
  final AtomicLong localBytes = new AtomicLong();
  final AtomicLong fetchWaitMs = new AtomicLong();
  final AtomicLong recordsRead = new AtomicLong();
  final AtomicLong bytesWritten = new AtomicLong();

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    TaskMetrics m = end.taskMetrics();
    if (m == null) {
      return;
    }
    ShuffleReadMetrics r = m.shuffleReadMetrics();
    remoteBytes.addAndGet(r.remoteBytesRead());
    localBytes.addAndGet(r.localBytesRead());
    fetchWaitMs.addAndGet(r.fetchWaitTime());
    recordsRead.addAndGet(r.recordsRead());
    bytesWritten.addAndGet(m.shuffleWriteMetrics().bytesWritten());
  }

  Map<String, Long> snapshot() {
    return Map.of(
        "remoteBytes",
        remoteBytes.get(),
        "localBytes",
        localBytes.get(),
        "fetchWaitMs",
        fetchWaitMs.get(),
        "recordsRead",
        recordsRead.get(),
        "bytesWritten",
        bytesWritten.get());
  }
}
