package io.memwire.transfer.tcp;

import java.io.IOException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Iterator;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One I/O thread with its selector. Every channel (server sessions and client connections) lives
 * on exactly one loop, so its state is touched by one thread only; other threads hand work over
 * with {@link #execute}.
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
  private volatile boolean running = true;

  EventLoop(String name) throws IOException {
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

  /** Runs {@code task} on the loop thread (soon; in order with other tasks). */
  void execute(Runnable task) {
    tasks.add(task);
    if (!inLoop() && wakeupPending.compareAndSet(false, true)) {
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
          } catch (IOException | RuntimeException e) {
            h.closeOnLoop(e);
          }
        }
        runTasks();
        long now = System.nanoTime();
        if (now - lastTick >= TICK_MS * 1_000_000L) {
          lastTick = now;
          for (SelectionKey key : selector.keys()) {
            if (key.isValid()) {
              ((Handler) key.attachment()).tick(now);
            }
          }
        }
      } catch (IOException | RuntimeException e) {
        LOG.warn("{} survived an unexpected error", thread.getName(), e);
      }
    }
    runTasks();
    for (SelectionKey key : selector.keys()) {
      ((Handler) key.attachment()).closeOnLoop(new IOException("transport stopped"));
    }
    runTasks();
    try {
      selector.close();
    } catch (IOException e) {
      LOG.debug("closing selector", e);
    }
  }

  private void runTasks() {
    Runnable r;
    while ((r = tasks.poll()) != null) {
      try {
        r.run();
      } catch (RuntimeException e) {
        LOG.warn("task on {} failed", thread.getName(), e);
      }
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
