package io.memwire.transfer;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The listener a test gives a node's connection pool to see its idle reaper's sweeps: how many have
 * finished and when the last one began, on the pool's clock.
 */
final class ReaperSweeps implements ConnectionPool.SweepListener {
  private final AtomicLong finished = new AtomicLong();
  private volatile long lastStartNanos;

  @Override
  public void swept(long startNanos) {
    lastStartNanos = startNanos;
    finished.incrementAndGet();
  }

  /** Sweeps finished so far. */
  long finished() {
    return finished.get();
  }

  /**
   * When the last finished sweep began (0 before the first): every connection idle by then has been
   * closed.
   */
  long lastStartNanos() {
    return lastStartNanos;
  }
}
