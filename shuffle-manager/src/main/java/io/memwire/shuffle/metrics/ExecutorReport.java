package io.memwire.shuffle.metrics;

import java.io.Serializable;
import java.util.Map;

/**
 * What an executor's plugin sends the driver's: its {@link MemwireMetrics} now.
 *
 * @param executorId Spark's executor id
 * @param sequence increases with every report of this executor (older ones arriving late are
 *     ignored)
 * @param tasksEnded tasks this executor finished (succeeded or failed) before taking the values
 * @param last true for the report sent when the executor shuts down
 * @param values by metric name
 */
public record ExecutorReport(
    String executorId, long sequence, long tasksEnded, boolean last, Map<String, Long> values)
    implements Serializable {
  private static final long serialVersionUID = 1L;
}
