package io.memwire.shuffle.service;

import java.io.Closeable;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Closing what the service listens on while it stops: a failure is logged, never thrown. */
final class Endpoints {
  // The service's own logger: these lines read as before the split.
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleService.class);

  private Endpoints() {}

  /** Closes an endpoint (its threads joined, its port free); null: it is off. */
  static void close(AutoCloseable endpoint, String what) {
    if (endpoint == null) {
      return;
    }
    try {
      endpoint.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.warn("shuffle service: closing the {} failed: {}", what, e.toString());
    }
  }

  /** Closes {@code c}, ignoring a failure. */
  static void closeQuietly(Closeable c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // closing only
    }
  }
}
