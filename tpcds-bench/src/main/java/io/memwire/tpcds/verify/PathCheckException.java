package io.memwire.tpcds.verify;

/**
 * A Memwire configuration read remote shuffle bytes that did not arrive one-sided (Spark's own
 * transfer moved them, or the counters do not show them): its timings would not measure Memwire's
 * path, so the run stops, as it does for a wrong answer.
 */
public final class PathCheckException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** A failed check described by {@code message}. */
  public PathCheckException(String message) {
    super(message);
  }
}
