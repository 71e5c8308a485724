package io.memwire.yarnit;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Polling for a condition another thread or process brings about. */
final class Waits {
  private Waits() {}

  /** Polls {@code condition} every 100 ms; fails naming {@code what} after {@code timeout}. */
  static void until(Duration timeout, BooleanSupplier condition, Supplier<String> what)
      throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("not within " + timeout.toSeconds() + " s: " + what.get());
      }
      Thread.sleep(100);
    }
  }
}
