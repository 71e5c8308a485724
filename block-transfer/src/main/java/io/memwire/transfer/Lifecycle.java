package io.memwire.transfer;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The open/closing/closed state of a long-lived object (a transfer node, a provider, a Flight
 * producer or client), moved atomically: of any number of threads calling its {@code close()} at
 * once exactly one wins {@link #beginClose()} and runs the close body, then calls {@link
 * #closed()}. The others either return at once (an owner whose close may be called from a thread
 * the body stops, which must not wait for itself) or wait in {@link #awaitClosed()}, so that every
 * {@code close()} returns with the resources released. Moves: OPEN → CLOSING → CLOSED, never back.
 */
public final class Lifecycle {
  /** Where the owner is. */
  public enum State {
    OPEN,
    CLOSING,
    CLOSED
  }

  private final AtomicReference<State> state = new AtomicReference<>(State.OPEN);
  private final CountDownLatch closed = new CountDownLatch(1);
  private volatile Thread closer;

  /** The state now. */
  public State state() {
    return state.get();
  }

  /** Whether nobody has begun closing. */
  public boolean isOpen() {
    return state.get() == State.OPEN;
  }

  /**
   * OPEN → CLOSING: true for the one caller that moved it, which must then call {@link #closed}.
   */
  public boolean beginClose() {
    if (state.compareAndSet(State.OPEN, State.CLOSING)) {
      closer = Thread.currentThread();
      return true;
    }
    return false;
  }

  /**
   * CLOSING → CLOSED, by the thread that won {@link #beginClose()} (in a {@code finally}: a close
   * body that throws still ends closed); releases the waiters.
   */
  public void closed() {
    if (!state.compareAndSet(State.CLOSING, State.CLOSED)) {
      throw new IllegalStateException("cannot move from " + state.get() + " to CLOSED");
    }
    closed.countDown();
  }

  /**
   * Waits until the closer has finished; returns at once on the closer's own thread (a close body
   * that ends up calling {@code close()} again must not wait for itself).
   */
  public void awaitClosed() {
    if (closer == Thread.currentThread()) {
      return;
    }
    boolean interrupted = false;
    while (true) {
      try {
        closed.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
