package io.memwire.shuffle.service;

import io.memwire.shuffle.service.ShuffleService.State;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The one lifecycle state of a {@link ShuffleService} ({@link State}: starting, recovering, ready,
 * closing, closed) and who runs its close. The state only moves forward, each step a
 * compare-and-set, so whatever thread calls what, each step's work runs once.
 *
 * <p>Threads: any thread may read or move the state. The thread that wins the move to {@code
 * CLOSING} is the closer: a close it calls again from within returns at once, and a close on any
 * other thread waits until the closer marks the service {@code CLOSED}.
 */
final class ServiceLifecycle {
  /** The one state; read by health, the threads' stop checks and every request. */
  private final AtomicReference<State> state = new AtomicReference<>(State.STARTING);

  /** Counted down once the close is done. */
  private final CountDownLatch stopped = new CountDownLatch(1);

  /** The thread doing the close (set once it won the move to CLOSING). */
  private volatile Thread closer;

  /** Where the service is in its life now. */
  State get() {
    return state.get();
  }

  /** True once the close has begun (closing or closed). */
  boolean stopping() {
    return state.get().stopping();
  }

  /** Moves from {@code from} to {@code to}; false when the state was not {@code from}. */
  boolean move(State from, State to) {
    return state.compareAndSet(from, to);
  }

  /**
   * Moves to {@code CLOSING} unless the close has begun already.
   *
   * @return the state it was in when this thread became the closer, or null when a close had begun
   *     before: called again by the closer it returns at once, on another thread once that close is
   *     done (keeping the caller's interrupt)
   */
  State beginClose() {
    State was = state.getAndUpdate(s -> s.stopping() ? s : State.CLOSING);
    if (was.stopping()) {
      if (closer == Thread.currentThread()) {
        return null; // called again from within the close (a hook, a failing step)
      }
      boolean interrupted = false;
      while (true) {
        try {
          stopped.await();
          break;
        } catch (InterruptedException e) {
          interrupted = true; // the closing thread is bounded; keep the caller's interrupt
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      return null;
    }
    closer = Thread.currentThread();
    return was;
  }

  /** Marks the close done: {@code CLOSED}, and every waiting close returns. */
  void closed() {
    state.set(State.CLOSED);
    stopped.countDown();
  }

  /** Waits until the close is done. */
  void awaitStop() throws InterruptedException {
    stopped.await();
  }
}
