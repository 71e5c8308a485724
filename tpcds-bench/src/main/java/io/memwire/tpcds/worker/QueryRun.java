package io.memwire.tpcds.worker;

import io.memwire.tpcds.verify.Answer;

/**
 * One execution of one query: wall time around planning plus collect, task metrics, which path the
 * shuffle manager moved the bytes on ({@code path}; null when the manager keeps no counters) and
 * the full answer.
 */
public record QueryRun(
    String query, long wallNanos, ShuffleMetrics metrics, PathCounters path, Answer answer) {
  /** Wall time in milliseconds. */
  public double wallMs() {
    return wallNanos / 1e6;
  }
}
