package io.memwire.shuffle.reader;

import java.util.concurrent.CompletionException;

/** How the read path names what made a read fail. */
final class Failures {
  private Failures() {}

  /** The cause of a {@link CompletionException}, or {@code e}. */
  static Throwable unwrap(Throwable e) {
    return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
  }

  /** The message of the first cause that has one, through completion wrappers. */
  static String rootMessage(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || (c.getCause() != null && c.getMessage() == null))
        && c.getCause() != null) {
      c = c.getCause();
    }
    return String.valueOf(c.getMessage());
  }
}
