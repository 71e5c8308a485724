package org.apache.hadoop.shaded.org.fusesource.leveldbjni.internal;

import java.io.IOException;

/** Holds {@link DBException}, the type the NodeManager's state store catches on open. */
public final class NativeDB {
  private NativeDB() {}

  /** Opening failed; {@link #isNotFound} when there was no store and none was to be created. */
  public static class DBException extends IOException {
    private static final long serialVersionUID = 1L;
    private final boolean notFound;

    /** A failure with its message; {@code notFound} when the store does not exist. */
    public DBException(String message, boolean notFound) {
      super(message);
      this.notFound = notFound;
    }

    /** Whether the store did not exist. */
    public boolean isNotFound() {
      return notFound;
    }
  }
}
