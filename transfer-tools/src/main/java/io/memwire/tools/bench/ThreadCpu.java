package io.memwire.tools.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * CPU time of a fixed set of this JVM's threads, for the part of a benchmark one node's threads do.
 * A thread that ends keeps the CPU it was last seen with, so the sum never goes back.
 */
final class ThreadCpu {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private final long[] ids;
  private final Map<Long, Long> lastSeen = new HashMap<>();

  private ThreadCpu(long[] ids) {
    this.ids = ids;
  }

  /** Ids of the threads alive now. */
  static Set<Long> liveThreadIds() {
    Set<Long> ids = new HashSet<>();
    for (long id : THREADS.getAllThreadIds()) {
      ids.add(id);
    }
    return ids;
  }

  /** The threads alive now that were not in {@code before}. */
  static ThreadCpu startedSince(Set<Long> before) {
    return new ThreadCpu(
        liveThreadIds().stream()
            .filter(id -> !before.contains(id))
            .mapToLong(Long::longValue)
            .toArray());
  }

  /** Their CPU time so far in nanoseconds; -1 where the JVM cannot measure thread CPU. */
  long nanos() {
    if (!THREADS.isThreadCpuTimeSupported() || !THREADS.isThreadCpuTimeEnabled()) {
      return -1;
    }
    long sum = 0;
    for (long id : ids) {
      long t = THREADS.getThreadCpuTime(id);
      if (t >= 0) {
        lastSeen.put(id, t);
      }
      sum += lastSeen.getOrDefault(id, 0L);
    }
    return sum;
  }

  /** Milliseconds of CPU per GiB of {@code bytes}; NaN when either is unknown. */
  static double msPerGiB(long cpuNanos, long bytes) {
    return cpuNanos < 0 || bytes <= 0 ? Double.NaN : cpuNanos / 1e6 / (bytes / 1073741824.0);
  }
}
