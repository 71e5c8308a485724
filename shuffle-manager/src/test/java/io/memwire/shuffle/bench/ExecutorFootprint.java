package io.memwire.shuffle.bench;

import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.metrics.EveryExecutor;
import io.memwire.transfer.metrics.TransportMetrics;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * What one executor holds after a job, read inside the executor: its heap's peak since {@link
 * #resetPeaks}, the shuffle files it has mapped (from {@code /proc/self/maps}, so it counts for any
 * shuffle manager), and Memwire's registered memory (peak since the node started) and mappings.
 *
 * @param heapPeakBytes sum of the heap pools' peak usage (an upper bound of the heap's peak: pools
 *     may peak at different times)
 * @param heapAfterGcBytes heap used after a full collection at the end: what the executor retains
 * @param mappedShuffleFiles distinct files under Spark's block manager directories mapped now
 * @param registeredPeakBytes Memwire's registered-memory peak since its node started; -1 without
 *     Memwire
 * @param mappedSegments Memwire's file mappings live now; -1 without Memwire
 */
record ExecutorFootprint(
    long heapPeakBytes,
    long heapAfterGcBytes,
    long mappedShuffleFiles,
    long registeredPeakBytes,
    long mappedSegments) {
  private static final Duration WAIT = Duration.ofSeconds(60);

  /** Resets the heap pools' peaks on every executor, so the next reading covers one job. */
  static void resetPeaks(JavaSparkContext jsc, int executors) {
    EveryExecutor.run(
        jsc,
        executors,
        WAIT,
        id -> {
          for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
              pool.resetPeakUsage();
            }
          }
          return id;
        });
  }

  /** Each executor's footprint now, by executor id. */
  static Map<String, ExecutorFootprint> read(JavaSparkContext jsc, int executors) {
    // Answers travel as long[]: Spark's Kryo cannot serialize records.
    Map<String, long[]> raw =
        EveryExecutor.run(jsc, executors, WAIT, id -> ExecutorFootprint.here());
    Map<String, ExecutorFootprint> out = new java.util.TreeMap<>();
    raw.forEach((id, v) -> out.put(id, new ExecutorFootprint(v[0], v[1], v[2], v[3], v[4])));
    return out;
  }

  /** The largest of each field over {@code byExecutor}. */
  static ExecutorFootprint max(Map<String, ExecutorFootprint> byExecutor) {
    List<ExecutorFootprint> all = List.copyOf(byExecutor.values());
    return new ExecutorFootprint(
        all.stream().mapToLong(ExecutorFootprint::heapPeakBytes).max().orElse(-1),
        all.stream().mapToLong(ExecutorFootprint::heapAfterGcBytes).max().orElse(-1),
        all.stream().mapToLong(ExecutorFootprint::mappedShuffleFiles).max().orElse(-1),
        all.stream().mapToLong(ExecutorFootprint::registeredPeakBytes).max().orElse(-1),
        all.stream().mapToLong(ExecutorFootprint::mappedSegments).max().orElse(-1));
  }

  private static long[] here() {
    long heap = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP && pool.getPeakUsage() != null) {
        heap += pool.getPeakUsage().getUsed();
      }
    }
    // Read after the peaks: the collection itself moves them.
    ManagementFactory.getMemoryMXBean().gc();
    long retained = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    RdmaShuffleManager m = RdmaShuffleManager.current();
    Map<String, Long> stats = m == null ? Map.of() : m.stats();
    return new long[] {
      heap,
      retained,
      countMappedShuffleFiles(),
      stats.getOrDefault(ShuffleMetrics.node(TransportMetrics.MEMORY_PEAK_BYTES), -1L),
      stats.getOrDefault(ShuffleMetrics.node(TransportMetrics.MAPPED_SEGMENTS), -1L)
    };
  }

  /** Distinct mapped files under a {@code blockmgr-} directory (Spark's shuffle files). */
  private static long countMappedShuffleFiles() {
    Set<String> files = new HashSet<>();
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
        int slash = line.indexOf('/');
        if (slash >= 0 && line.contains("/blockmgr-")) {
          files.add(line.substring(slash));
        }
      }
    } catch (IOException e) {
      return -1;
    }
    return files.size();
  }
}
