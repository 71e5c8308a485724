package io.memwire.transfer.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The tests' one wait for a condition: polls it until it holds or the deadline passes, then fails
 * with an {@link AssertionError} naming what was awaited. Polls every millisecond at first, backing
 * off to every 20 ms. In block-transfer's test jar, for every module that depends on it.
 */
public final class Await {
  private static final long MAX_POLL_MS = 20;

  private Await() {}

  /** Waits until {@code condition} holds, at most {@code timeout}. */
  public static void until(String what, Duration timeout, BooleanSupplier condition) {
    until(() -> what, timeout, condition);
  }

  /**
   * Waits until {@code condition} holds, at most {@code timeout}; {@code what} is asked only on a
   * failure, so it may describe the state then.
   */
  public static void until(Supplier<String> what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    long pollMs = 1;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("not within " + timeout + ": " + what.get());
      }
      try {
        Thread.sleep(pollMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting: " + what.get(), e);
      }
      pollMs = Math.min(MAX_POLL_MS, pollMs * 2);
    }
  }
}
