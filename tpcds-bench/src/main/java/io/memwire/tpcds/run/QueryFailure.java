package io.memwire.tpcds.run;

/**
 * A query that failed to run with one configuration (an error, not a wrong answer): recorded in the
 * report, and the run goes on without that query.
 *
 * @param round 0-based round in which it failed
 * @param error the worker's description of the error
 */
public record QueryFailure(String query, String config, int round, String error) {}
