package io.memwire.tpcds.worker;

/**
 * Task metrics of one query run, summed over all its tasks (times in milliseconds, sizes in bytes).
 * {@code recordsRead} counts shuffle records read by reducers.
 *
 * @param executorCpuMs the tasks' CPU time: run time above it is time a task waited or was off its
 *     core (other threads of the executor, such as the JIT compilers, or other processes)
 * @param gcMs the JVMs' garbage-collection time during the tasks
 * @param readTaskRunMs run time of the tasks that read shuffle blocks (the reduce side)
 */
public record ShuffleMetrics(
    long tasks,
    long executorRunMs,
    long bytesWritten,
    long recordsWritten,
    long localBytesRead,
    long remoteBytesRead,
    long fetchWaitMs,
    long recordsRead,
    long localBlocksFetched,
    long remoteBlocksFetched,
    long executorCpuMs,
    long gcMs,
    long readTaskRunMs) {
  /** No tasks. */
  public static final ShuffleMetrics ZERO =
      new ShuffleMetrics(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

  /** Local plus remote shuffle bytes read. */
  public long bytesRead() {
    return localBytesRead + remoteBytesRead;
  }

  /** The sum of this and {@code o}. */
  public ShuffleMetrics plus(ShuffleMetrics o) {
    return new ShuffleMetrics(
        tasks + o.tasks,
        executorRunMs + o.executorRunMs,
        bytesWritten + o.bytesWritten,
        recordsWritten + o.recordsWritten,
        localBytesRead + o.localBytesRead,
        remoteBytesRead + o.remoteBytesRead,
        fetchWaitMs + o.fetchWaitMs,
        recordsRead + o.recordsRead,
        localBlocksFetched + o.localBlocksFetched,
        remoteBlocksFetched + o.remoteBlocksFetched,
        executorCpuMs + o.executorCpuMs,
        gcMs + o.gcMs,
        readTaskRunMs + o.readTaskRunMs);
  }
}
