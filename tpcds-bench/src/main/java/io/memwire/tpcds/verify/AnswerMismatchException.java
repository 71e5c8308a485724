package io.memwire.tpcds.verify;

/** Two shuffle managers returned different answers for the same query: the benchmark is void. */
public final class AnswerMismatchException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * A mismatch described by {@code message} (which names the query, both configurations and rows).
   */
  public AnswerMismatchException(String message) {
    super(message);
  }
}
