package io.memwire.transfer.ucx;

import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one thread that touches a node's UCX context and worker (a UCX worker is single-threaded):
 * other threads hand it work with {@link #execute}, which queues the task and signals the worker.
 * When there is nothing to progress it arms the worker and sleeps on its event file descriptor, so
 * an idle node costs no CPU; it also serves the GETs UCX emulates in software (tcp, shared memory
 * of file mappings), which complete only while the serving worker progresses.
 */
final class UcxProgressThread {
  private static final Logger LOG = LoggerFactory.getLogger(UcxProgressThread.class);
  private static final long START_SECONDS = 30;

  private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final CompletableFuture<Void> started = new CompletableFuture<>();
  private final Thread thread;

  /** Whether the context outlives the thread (see {@link #stop(boolean)}). */
  private volatile boolean keepContext;

  /** Set when the loop has ended, before the worker closes. */
  private volatile boolean ended;

  private volatile boolean stopping;
  private UcpContext context;
  private UcpWorker worker;

  private UcxProgressThread(String name, Map<String, String> config) {
    thread = new Thread(() -> run(config), name);
    thread.setDaemon(true);
  }

  /** Starts the thread, which creates the context and the worker; fails with UCX's error. */
  static UcxProgressThread start(String name, Map<String, String> config) {
    UcxProgressThread t = new UcxProgressThread(name, config);
    t.thread.start();
    try {
      t.started.get(START_SECONDS, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while UCX started", e);
    } catch (ExecutionException | TimeoutException e) {
      t.stop();
      Throwable c = e instanceof ExecutionException ? e.getCause() : e;
      throw new IllegalStateException("UCX did not start: " + c.getMessage(), c);
    }
    return t;
  }

  /** The context; only on this thread. */
  UcpContext context() {
    assert onThread();
    return context;
  }

  /** The worker; only on this thread. */
  UcpWorker worker() {
    assert onThread();
    return worker;
  }

  boolean onThread() {
    return Thread.currentThread() == thread;
  }

  /** Runs {@code task} on this thread, soon. */
  void execute(Runnable task) {
    tasks.add(task);
    UcpWorker w = worker;
    if (w != null && !ended && !onThread()) {
      try {
        w.signal();
      } catch (UcxException e) {
        LOG.debug("signal after stop", e);
      }
    }
  }

  /** Runs {@code task} here (inline when already on this thread) and returns its result. */
  <T> T call(Callable<T> task) {
    return call(task, START_SECONDS);
  }

  /**
   * {@link #call(Callable)} waiting at most {@code seconds}: a registration pins every page, which
   * under emulation (Soft-RoCE in a VM without KVM) took over 30 s for 32 MiB.
   */
  <T> T call(Callable<T> task, long seconds) {
    if (onThread()) {
      try {
        return task.call();
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
    CompletableFuture<T> f = new CompletableFuture<>();
    execute(
        () -> {
          try {
            f.complete(task.call());
          } catch (Exception | Error e) {
            f.completeExceptionally(e);
          }
        });
    try {
      return f.get(seconds, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted waiting for the UCX thread", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException) {
        throw (RuntimeException) e.getCause();
      }
      throw new IllegalStateException(e.getCause());
    } catch (TimeoutException e) {
      throw new IllegalStateException(
          "the UCX thread " + thread.getName() + " did not answer within " + seconds + " s", e);
    }
  }

  /** Progresses the worker once (on this thread), for loops waiting on a request. */
  int progressOnce() {
    try {
      return worker.progress();
    } catch (Exception e) {
      LOG.warn("UCX progress failed", e);
      return 0;
    }
  }

  /** Stops the loop after the queued tasks; frees the worker and the context; joins. */
  void stop() {
    stop(false);
  }

  /**
   * {@link #stop()}, but with {@code keepContext} the UCX context stays: memory UCX allocated is
   * still mapped for an owner that holds it, and destroying the context under it aborts UCX (its
   * registration cache asserts that nothing is still registered).
   */
  void stop(boolean keepContext) {
    this.keepContext = keepContext;
    stopping = true;
    execute(() -> {});
    if (!onThread()) {
      try {
        thread.join(TimeUnit.SECONDS.toMillis(START_SECONDS));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  boolean isAlive() {
    return thread.isAlive();
  }

  private void run(Map<String, String> config) {
    try {
      UcpParams params = new UcpParams().requestRmaFeature().requestWakeupFeature();
      config.forEach(params::setConfig);
      context = new UcpContext(params);
      UcxResources.CONTEXTS.incrementAndGet();
      worker = context.newWorker(new UcpWorkerParams());
      UcxResources.WORKERS.incrementAndGet();
    } catch (RuntimeException | Error e) {
      if (context != null) {
        context.close();
        UcxResources.CONTEXTS.decrementAndGet();
      }
      started.completeExceptionally(e);
      return;
    }
    started.complete(null);
    try {
      loop();
    } finally {
      runTasks();
      ended = true; // a task queued from now on never runs, and nothing signals the closed worker
      worker.close();
      UcxResources.WORKERS.decrementAndGet();
      if (keepContext) {
        UcxResources.CONTEXTS.decrementAndGet();
        UcxResources.LEFT_MAPPED.incrementAndGet();
      } else {
        context.close();
        UcxResources.CONTEXTS.decrementAndGet();
      }
    }
  }

  private void loop() {
    while (!stopping) {
      runTasks();
      if (progressOnce() > 0 || !tasks.isEmpty()) {
        continue;
      }
      try {
        worker.arm(); // busy: events are pending, progress again
      } catch (UcxException busy) {
        continue;
      }
      // A task queued before the arm drained the event fd is seen here; one queued after it
      // signalled the armed worker, so the wait returns at once.
      if (!tasks.isEmpty() || stopping) {
        continue;
      }
      try {
        worker.waitForEvents();
      } catch (UcxException e) {
        LOG.debug("UCX wait interrupted", e);
      }
    }
  }

  private void runTasks() {
    Runnable r;
    while ((r = tasks.poll()) != null) {
      try {
        r.run();
      } catch (RuntimeException e) {
        LOG.warn("UCX task failed", e);
      }
    }
  }
}
