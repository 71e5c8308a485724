package io.memwire.transfer.tcp;

import java.io.IOException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Iterator;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One I/O thread with its selector. Every channel (server sessions and client connections) lives on
 * exactly one loop, so its state is touched by one thread only; other threads hand work over with
 * {@link #execute}.
 *
 * <p>The thread never dies of a handler's failure, {@link Error}s included (an {@link
 * OutOfMemoryError} for direct memory is the likely one): the failing channel is closed, the
 * failure counted and logged (the first one at ERROR, later ones at DEBUG), and the loop goes on
 * serving every other channel.
 */
final class EventLoop implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(EventLoop.class);
  private static final long TICK_MS = 250;

  /** What a registered channel's attachment implements. */
  interface Handler {
    void ready(SelectionKey key) throws IOException;

    /** The loop is stopping or the handler failed: release everything. */
    void closeOnLoop(Exception cause);

    /** Called every tick (about 250 ms) for deadline checks. */
    default void tick(long nowNanos) {}
  }

  private final Selector selector;
  private final Thread thread;
  private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean wakeupPending = new AtomicBoolean();
  private final LongAdder loopErrors;
  private final AtomicBoolean errorLogged = new AtomicBoolean();
  private volatile boolean running = true;

  /** Set once the thread ran its last tasks: later tasks run on the thread that hands them over. */
  private volatile boolean ended;

  /**
   * @param loopErrors counts failures the loop survived that were not the channel's own I/O errors:
   *     {@link Error}s and unexpected exceptions
   */
  EventLoop(String name, LongAdder loopErrors) throws IOException {
    this.loopErrors = loopErrors;
    this.selector = Selector.open();
    this.thread = new Thread(this, name);
    this.thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  boolean inLoop() {
    return Thread.currentThread() == thread;
  }

  /**
   * Runs {@code task} on the loop thread (soon; in order with other tasks), or on this thread when
   * the loop has ended (its channels are closed and nothing else touches them), so a task such as a
   * connection's stop is never lost.
   */
  void execute(Runnable task) {
    tasks.add(task);
    if (ended) {
      runTasks();
    } else if (!inLoop() && wakeupPending.compareAndSet(false, true)) {
      selector.wakeup();
    }
  }

  /** Registers a channel; call on the loop thread. */
  SelectionKey register(SelectableChannel ch, int ops, Handler handler) throws IOException {
    return ch.register(selector, ops, handler);
  }

  @Override
  public void run() {
    long lastTick = System.nanoTime();
    while (running) {
      try {
        selector.select(TICK_MS);
        wakeupPending.set(false);
        Iterator<SelectionKey> it = selector.selectedKeys().iterator();
        while (it.hasNext()) {
          SelectionKey key = it.next();
          it.remove();
          Handler h = (Handler) key.attachment();
          try {
            if (key.isValid()) {
              h.ready(key);
            }
          } catch (IOException e) {
            close(key, h, e);
          } catch (RuntimeException | Error e) {
            survived("serving a channel", e);
            close(key, h, e);
          }
        }
        runTasks();
        long now = System.nanoTime();
        if (now - lastTick >= TICK_MS * 1_000_000L) {
          lastTick = now;
          for (SelectionKey key : selector.keys()) {
            Handler h = (Handler) key.attachment();
            try {
              if (key.isValid()) {
                h.tick(now);
              }
            } catch (RuntimeException | Error e) {
              survived("checking a deadline", e);
              close(key, h, e);
            }
          }
        }
      } catch (IOException | RuntimeException | Error e) {
        survived("selecting", e);
      }
    }
    runTasks();
    for (SelectionKey key : selector.keys()) {
      close(key, (Handler) key.attachment(), new IOException("transport stopped"));
    }
    runTasks();
    try {
      selector.close();
    } catch (IOException e) {
      LOG.debug("closing selector", e);
    }
    ended = true;
    runTasks(); // handed over while the loop was ending
  }

  private void runTasks() {
    Runnable r;
    while ((r = tasks.poll()) != null) {
      try {
        r.run();
      } catch (RuntimeException | Error e) {
        survived("running a task", e);
      }
    }
  }

  /** Closes a failed channel; a failure while closing only cancels its key. */
  private void close(SelectionKey key, Handler h, Throwable cause) {
    try {
      h.closeOnLoop(
          cause instanceof Exception
              ? (Exception) cause
              : new IOException("I/O thread error: " + cause, cause));
    } catch (RuntimeException | Error e) {
      survived("closing a failed channel", e);
      key.cancel();
      try {
        key.channel().close();
      } catch (IOException | RuntimeException ignored) {
        // the key is cancelled; nothing else holds the channel
      }
    }
  }

  /** Counts a failure the thread survives; logs the first at ERROR, later ones at DEBUG. */
  private void survived(String what, Throwable e) {
    loopErrors.increment();
    if (errorLogged.compareAndSet(false, true)) {
      LOG.error(
          "{} survived {} while {}; the failed channel is closed, the thread goes on "
              + "(further such failures are counted as loopErrors and logged at DEBUG)",
          thread.getName(),
          e,
          what,
          e);
    } else {
      LOG.debug("{} survived {} while {}", thread.getName(), e, what, e);
    }
  }

  /** Stops the loop, closing every channel on it, and waits for the thread to end. */
  void shutdown() {
    running = false;
    selector.wakeup();
    if (!inLoop()) {
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  boolean isAlive() {
    return thread.isAlive();
  }
}
