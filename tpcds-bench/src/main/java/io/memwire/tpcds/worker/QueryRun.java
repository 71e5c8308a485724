package io.memwire.tpcds.worker;

import io.memwire.tpcds.verify.Answer;

/** One execution of one query: wall time around planning plus collect, task metrics and the full answer. */
public record QueryRun(String query, long wallNanos, ShuffleMetrics metrics, Answer answer) {
    /** Wall time in milliseconds. */
    public double wallMs() {
        return wallNanos / 1e6;
    }
}
