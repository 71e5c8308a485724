package org.apache.hadoop.shaded.org.iq80.leveldb;

/** A store operation failed. */
public class DBException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** A failure with its message and cause. */
  public DBException(String message, Throwable cause) {
    super(message, cause);
  }
}
