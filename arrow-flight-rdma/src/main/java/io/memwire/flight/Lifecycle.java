package io.memwire.flight;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The open/closing/closed state of a producer or client, moved atomically: of any number of threads
 * calling {@code close()} at once exactly one wins {@link #beginClose()} and runs the close body;
 * the others wait in {@link #awaitClosed()} until it has finished, so every {@code close()} returns
 * with the resources released. Moves: OPEN → CLOSING → CLOSED, never back.
 */
final class Lifecycle {
  /** Where the owner is. */
  enum State {
    OPEN,
    CLOSING,
    CLOSED
  }

  private final AtomicReference<State> state = new AtomicReference<>(State.OPEN);
  private final CountDownLatch closed = new CountDownLatch(1);
  private volatile Thread closer;

  /** The state now. */
  State state() {
    return state.get();
  }

  /** Whether nobody has begun closing. */
  boolean isOpen() {
    return state.get() == State.OPEN;
  }

  /**
   * OPEN → CLOSING: true for the one caller that moved it, which must then call {@link #closed}.
   */
  boolean beginClose() {
    if (state.compareAndSet(State.OPEN, State.CLOSING)) {
      closer = Thread.currentThread();
      return true;
    }
    return false;
  }

  /** CLOSING → CLOSED, by the thread that won {@link #beginClose()}; releases the waiters. */
  void closed() {
    if (!state.compareAndSet(State.CLOSING, State.CLOSED)) {
      throw new IllegalStateException("cannot move from " + state.get() + " to CLOSED");
    }
    closed.countDown();
  }

  /**
   * Waits until the closer has finished; returns at once on the closer's own thread (a close body
   * that ends up calling {@code close()} again must not wait for itself).
   */
  void awaitClosed() {
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
