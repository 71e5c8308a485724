package io.memwire.shuffle.service;

import io.memwire.transfer.TransferNode;
import java.util.concurrent.TimeUnit;

/** How a stop with recovery on lets reads reducers have under way end before the regions go. */
final class ReadDrain {
  /** Longest a stop with recovery on waits for reads under way. */
  private static final long DRAIN_NANOS = TimeUnit.SECONDS.toNanos(5);

  /** A stop with recovery on goes on once no read was served for this long. */
  private static final long DRAIN_QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

  private ReadDrain() {}

  /**
   * Waits, at most {@link #DRAIN_NANOS}, until the transfer node has served no read for {@link
   * #DRAIN_QUIET_NANOS}: reads reducers have under way finish before the regions go. (Over verbs
   * the service does not see reads; the wait is then the quiet period alone.)
   */
  static void await(TransferNode node) {
    long end = System.nanoTime() + DRAIN_NANOS;
    long served = node.stats().servedReads();
    long quietSince = System.nanoTime();
    try {
      while (System.nanoTime() - end < 0 && System.nanoTime() - quietSince < DRAIN_QUIET_NANOS) {
        Thread.sleep(20);
        long now = node.stats().servedReads();
        if (now != served) {
          served = now;
          quietSince = System.nanoTime();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
