package io.memwire.tpcds.run;

import io.memwire.tpcds.worker.PathCounters;
import io.memwire.tpcds.worker.ShuffleMetrics;

/**
 * One execution of one query with one configuration.
 *
 * @param round 0-based round; rounds below the warm-up count are not timed
 * @param warmup whether this was a warm-up execution (left out of the statistics)
 * @param rows rows in the answer
 * @param path the shuffle manager's counters for the execution (null when it keeps none)
 */
public record Measurement(
    String query,
    String config,
    int round,
    boolean warmup,
    double wallMs,
    long rows,
    ShuffleMetrics metrics,
    PathCounters path) {}
