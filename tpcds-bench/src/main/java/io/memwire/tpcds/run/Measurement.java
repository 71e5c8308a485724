package io.memwire.tpcds.run;

import io.memwire.tpcds.worker.PathCounters;
import io.memwire.tpcds.worker.ShuffleMetrics;

/**
 * One execution of one query with one configuration.
 *
 * @param session 0-based session: each session runs on clusters started for it
 * @param round 0-based round, numbered across sessions; a session's first {@code --warmup} rounds
 *     are not timed
 * @param warmup whether this was a warm-up execution (left out of the statistics)
 * @param rows rows in the answer
 * @param path the shuffle manager's counters for the execution (null when it keeps none)
 */
public record Measurement(
    String query,
    String config,
    int session,
    int round,
    boolean warmup,
    double wallMs,
    long rows,
    ShuffleMetrics metrics,
    PathCounters path) {}
