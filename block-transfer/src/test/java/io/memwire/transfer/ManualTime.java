package io.memwire.transfer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.Executors;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Time a timing test moves itself: a clock and a scheduler for a node's connection pool (its read
 * timeouts, back-offs and idle reaper). Nothing scheduled here runs on its own: {@link #advance}
 * moves the clock and then runs every task that has come due, on the test's thread, so a test
 * asserts what the pool did right after the advance instead of polling until real time has passed.
 *
 * <p>The clock moves only when the test advances it: the node decides every timeout on it (its
 * connections stamp reads and ends on it too), so real time passing changes nothing.
 */
public final class ManualTime {
  private final AtomicLong advanced = new AtomicLong();
  private final Scheduler scheduler = new Scheduler();

  /** Where the clock started: any value; only differences count. */
  private final long origin = System.nanoTime();

  /** The clock: it moves only by {@link #advance}. */
  public long nanoTime() {
    return origin + advanced.get();
  }

  /** The scheduler whose tasks run only in {@link #advance} and {@link #runDue}. */
  public ScheduledExecutorService scheduler() {
    return scheduler;
  }

  /** Moves the clock by {@code d}, then runs every task due by then (periodic ones re-armed). */
  public void advance(Duration d) {
    advanced.addAndGet(d.toNanos());
    runDue();
  }

  /** Runs every task due now, earliest first, on this thread; how many ran. */
  public int runDue() {
    int ran = 0;
    Task<?> t;
    while ((t = scheduler.takeDue(nanoTime())) != null) {
      t.runOnce();
      ran++;
    }
    return ran;
  }

  /**
   * Starts a node on {@code provider} whose connection pool uses this clock and scheduler; for
   * tests outside this package.
   */
  public TransferNode start(
      TransferConfig config, io.memwire.transfer.spi.TransportProvider provider, String reason) {
    return start(config, provider, reason, ConnectionPool.SweepListener.NONE);
  }

  /**
   * As {@link #start(TransferConfig, io.memwire.transfer.spi.TransportProvider, String)}, telling
   * {@code sweeps}.
   */
  TransferNode start(
      TransferConfig config,
      io.memwire.transfer.spi.TransportProvider provider,
      String reason,
      ConnectionPool.SweepListener sweeps) {
    return new TransferNode(config, provider, reason, this::nanoTime, scheduler, sweeps);
  }

  /**
   * Starts a node on the provider {@code config} selects (as {@link TransferNode#start}) whose
   * connection pool uses this clock and scheduler.
   */
  public TransferNode start(TransferConfig config) {
    ProviderSelection.Result chosen = ProviderSelection.open(config);
    return start(config, chosen.provider(), chosen.reason());
  }

  /** A scheduled task: due at {@code dueNanos}, then every {@code delayNanos} after it ran. */
  private final class Task<V> extends FutureTask<V> implements ScheduledFuture<V> {
    private final long seq;
    private final long delayNanos;
    private long dueNanos;

    Task(Callable<V> body, long dueNanos, long delayNanos, long seq) {
      super(body);
      this.dueNanos = dueNanos;
      this.delayNanos = delayNanos;
      this.seq = seq;
    }

    void runOnce() {
      if (delayNanos == 0) {
        run();
      } else if (runAndReset()) {
        dueNanos = nanoTime() + delayNanos; // fixed delay: counted from the end of this run
        scheduler.add(this);
      }
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(dueNanos - nanoTime(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      Task<?> other = (Task<?>) o;
      int c = Long.compare(dueNanos - other.dueNanos, 0);
      return c != 0 ? c : Long.compare(seq, other.seq);
    }
  }

  /** Keeps tasks until the test runs them; has no thread. */
  private final class Scheduler extends AbstractExecutorService
      implements ScheduledExecutorService {
    private final PriorityQueue<Task<?>> queue = new PriorityQueue<>();
    private long seqs;
    private boolean shutdown;

    synchronized void add(Task<?> t) {
      if (!shutdown) {
        queue.add(t);
      }
    }

    synchronized Task<?> takeDue(long now) {
      Task<?> head = queue.peek();
      if (head == null || head.dueNanos - now > 0) {
        return null;
      }
      return queue.poll();
    }

    private synchronized <V> Task<V> schedule(Callable<V> body, long delayNanos, long period) {
      if (shutdown) {
        throw new java.util.concurrent.RejectedExecutionException("shut down");
      }
      Task<V> t = new Task<>(body, nanoTime() + delayNanos, period, seqs++);
      queue.add(t);
      return t;
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
      return schedule(Executors.callable(command), unit.toNanos(delay), 0);
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
      return schedule(callable, unit.toNanos(delay), 0);
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(
        Runnable command, long initialDelay, long period, TimeUnit unit) {
      // Only fixed delays are used by the pool; a rate would need catch-up runs.
      throw new UnsupportedOperationException("scheduleAtFixedRate");
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(
        Runnable command, long initialDelay, long delay, TimeUnit unit) {
      if (delay <= 0) {
        throw new IllegalArgumentException("delay " + delay);
      }
      return schedule(Executors.callable(command), unit.toNanos(initialDelay), unit.toNanos(delay));
    }

    @Override
    public void execute(Runnable command) {
      var unused = schedule(Executors.callable(command), 0, 0);
    }

    @Override
    public synchronized void shutdown() {
      shutdown = true;
    }

    @Override
    public synchronized List<Runnable> shutdownNow() {
      shutdown = true;
      List<Runnable> left = new ArrayList<>(queue);
      queue.clear();
      return left;
    }

    @Override
    public synchronized boolean isShutdown() {
      return shutdown;
    }

    @Override
    public synchronized boolean isTerminated() {
      return shutdown;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return isShutdown(); // no thread: nothing runs unless the test runs it
    }
  }
}
