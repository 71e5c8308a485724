package io.memwire.transfer;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.spi.ProviderConnection;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * When a {@link Connection} may be handed out, retired as idle, or dropped by the node: the
 * requests open on it and when it was last used.
 *
 * <p>Idle reaping ({@link TransferConfig#connectionIdleTimeout()}) adds one more way to end: the
 * node's reaper {@linkplain #retireIfIdle retires} a connection only under its {@link
 * ReadQueue#lock}, only when no request is open on it and nothing touched it for the timeout. Being
 * handed out by {@link TransferNode#connection} ({@link #claim}) and the end of every request touch
 * it; a claim and a retirement exclude each other under the lock, so a connection the node just
 * handed out is never retired within the timeout, and once retired no read is queued on it: a read
 * that arrives later fails at once, unsent, with {@link ConnectionReapedException}. The provider
 * connection is closed after the retirement, with nothing outstanding, so no read ever fails
 * because of the reaper.
 */
final class ConnectionLifecycle {
  private final ProviderConnection transport;
  private final ReadQueue queue;
  private final Duration idleTimeout;
  private final NanoClock clock;

  /** Requests accepted by {@link Connection#read} and not yet completed or failed. */
  private final AtomicInteger openRequests = new AtomicInteger();

  /**
   * When the connection was last handed out or a request on it ended (on the node's clock, the one
   * the reaper compares it with); only moves forward.
   */
  private final AtomicLong lastUsedNanos;

  ConnectionLifecycle(
      ProviderConnection transport, ReadQueue queue, Duration idleTimeout, NanoClock clock) {
    this.transport = transport;
    this.queue = queue;
    this.idleTimeout = idleTimeout;
    this.clock = clock;
    this.lastUsedNanos = new AtomicLong(clock.nanoTime());
  }

  /**
   * The node hands the connection out: true, and it counts as used now, unless it already failed or
   * was retired (then the node opens a fresh one). Excludes {@link #retireIfIdle} under the lock.
   */
  boolean claim(long nowNanos) {
    if (idleTimeout.isZero()) {
      return transport.failure() == null; // no reaper: nothing to exclude, no lock
    }
    synchronized (queue.lock) {
      if (queue.isRetired() || transport.failure() != null) {
        return false;
      }
      touch(nowNanos);
      return true;
    }
  }

  /**
   * The node's reaper: retires the connection when it is open, has no request open and was not used
   * for {@code idleNanos}; true when this call retired it (the caller then closes it). After that
   * nothing is ever queued on it.
   */
  boolean retireIfIdle(long nowNanos, long idleNanos) {
    synchronized (queue.lock) {
      // Requests first: a request ends by touching, then leaving the count.
      if (queue.isRetired()
          || openRequests.get() != 0
          || nowNanos - lastUsedNanos.get() < idleNanos
          || !queue.isEmptyLocked()
          || transport.failure() != null) {
        return false;
      }
      queue.retireLocked();
      return true;
    }
  }

  /** True once the provider connection failed or closed and every read on it has ended. */
  boolean isDone() {
    return transport.failure() != null && openRequests.get() == 0;
  }

  /** Counts {@code n} accepted requests. */
  void requestsStarted(int n) {
    openRequests.addAndGet(n);
  }

  /** A request ended: the connection was used now, then one fewer request is open. */
  void requestEnded() {
    touch(clock.nanoTime());
    openRequests.decrementAndGet();
  }

  private void touch(long nowNanos) {
    lastUsedNanos.accumulateAndGet(nowNanos, (prev, now) -> now - prev > 0 ? now : prev);
  }
}
