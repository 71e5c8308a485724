package io.memwire.shuffle.reader;

import java.util.ArrayList;
import java.util.List;

/**
 * Holds the fetch requests one thread issues during one step of Spark's iterator and starts them
 * together, in the order issued, when the step ends. Spark issues several requests back to back
 * and, from 4.1 on, counts the time spent issuing them as fetch wait; starting each at once lets
 * its I/O threads compete with the task thread before it has issued the next one.
 *
 * <p>Threads: {@link #hold()} and {@link #release()} run on the task thread; {@link #post} on the
 * thread that issues the request. Only the holding thread touches the queue, so it needs no lock; a
 * request posted by any other thread starts at once on that thread.
 */
final class HeldRequests {
  /** The thread whose requests are held, or null. */
  private Thread holder;

  /** Requests held so far, in the order issued; null while there are none. */
  private List<Runnable> held;

  /** Starts {@code start} now, or queues it when this thread is holding. */
  void post(Runnable start) {
    if (holder == Thread.currentThread()) {
      if (held == null) {
        held = new ArrayList<>(4);
      }
      held.add(start);
    } else {
      start.run();
    }
  }

  /** Queues the requests this thread posts from now on, until {@link #release()}. */
  void hold() {
    holder = Thread.currentThread();
  }

  /** Starts the queued requests, in the order posted, and stops holding. */
  void release() {
    List<Runnable> queued = held;
    holder = null;
    held = null;
    if (queued != null) {
      queued.forEach(Runnable::run);
    }
  }
}
