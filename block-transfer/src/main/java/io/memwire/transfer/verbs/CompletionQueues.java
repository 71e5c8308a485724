package io.memwire.transfer.verbs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The provider's completion queues, each with its own completion thread, and which client queue
 * pair sits on which. A queue holds {@code perQueue} queue pairs, as the provider sizes it ({@link
 * QueueSizing#queuePairsPerQueue}): each may have at most {@code qpDepth} work requests
 * outstanding, and a queue pair in error flushes every one of them as a completion, so the queue
 * cannot overflow. When every queue is full the next queue pair gets a new queue, up to {@code
 * maxQueues}; beyond that {@link #acquire} refuses with {@link LimitReachedException}. A queue
 * other than the first is closed (off the caller's thread, on {@code closer}) once its last queue
 * pair is destroyed, so the queues follow the connections down as well as up. The first queue also
 * carries the served (accepted) queue pairs, which post nothing and take no entries, and lives
 * until {@link #close}.
 *
 * <p>Queue pairs are packed into the lowest queue with room, so extra queues drain and close when
 * the connection count falls. Thread-safe; {@link #acquire} opens a queue while holding the lock
 * (one CQ and one thread: quick).
 *
 * @param <Q> the queue (a {@link CompletionThread} in the provider, a fake in tests)
 */
final class CompletionQueues<Q extends CompletionQueues.Queue> {
  private static final Logger LOG = LoggerFactory.getLogger(CompletionQueues.class);

  /** One completion queue and its thread. */
  interface Queue {
    /** Stops the thread and destroys the queue; every queue pair on it is already destroyed. */
    void close();
  }

  /** Opens queue number {@code index} (0 for the first). */
  interface Opener<Q> {
    Q open(int index) throws IOException;
  }

  /** Every queue is full and no further one may be opened. */
  static final class LimitReachedException extends Exception {
    private static final long serialVersionUID = 1L;

    LimitReachedException(String message) {
      super(message);
    }
  }

  /**
   * A queue and the queue pairs placed on it. Its mutable fields are guarded by the enclosing
   * CompletionQueues' monitor (Error Prone cannot name an enclosing instance's lock from here).
   */
  final class Shard {
    final Q queue;
    final int index;

    private int used;

    /** Out of use: no queue pair is placed on it any more. */
    private boolean closed;

    /** Its close began (on the closer or in {@link #close}); it runs once. */
    private boolean closeStarted;

    Shard(Q queue, int index) {
      this.queue = queue;
      this.index = index;
    }

    @Override
    public String toString() {
      return "completion queue " + index + " (" + used + "/" + perQueue + " queue pairs)";
    }
  }

  /** One queue pair's place on a queue; released once when the queue pair is destroyed. */
  final class Slot {
    final Shard shard;

    private boolean released;

    Slot(Shard shard) {
      this.shard = shard;
    }

    Q queue() {
      return shard.queue;
    }
  }

  private final int perQueue;
  private final int maxQueues;
  private final Opener<Q> opener;
  private final Executor closer;
  private final Consumer<Q> afterClose;

  @GuardedBy("this")
  private final List<Shard> shards = new ArrayList<>();

  /**
   * Queues out of use and not closed yet: emptied ones handed to the closer (or left for {@link
   * #close} when the closer no longer runs), and all of them during {@link #close}.
   */
  @GuardedBy("this")
  private final List<Shard> closing = new ArrayList<>();

  @GuardedBy("this")
  private int nextIndex;

  @GuardedBy("this")
  private int peak;

  @GuardedBy("this")
  private long opened;

  @GuardedBy("this")
  private long closedCount;

  @GuardedBy("this")
  private boolean shut;

  /**
   * Queues of {@code perQueue} queue pairs, at most {@code maxQueues}; {@code closer} closes
   * emptied ones and {@code afterClose} sees each queue once it is closed (to keep its counters).
   */
  CompletionQueues(
      int perQueue, int maxQueues, Opener<Q> opener, Executor closer, Consumer<Q> afterClose) {
    if (perQueue < 1 || maxQueues < 1) {
      throw new IllegalArgumentException(
          "perQueue " + perQueue + " and maxQueues " + maxQueues + " must be positive");
    }
    this.perQueue = perQueue;
    this.maxQueues = maxQueues;
    this.opener = opener;
    this.closer = closer;
    this.afterClose = afterClose;
  }

  /** Opens the first queue; call once, before anything else. */
  synchronized Q openFirst() throws IOException {
    if (!shards.isEmpty() || nextIndex != 0) {
      throw new IllegalStateException("the first completion queue is already open");
    }
    return openShard().queue;
  }

  /** The first queue: where served queue pairs go. */
  synchronized Q first() {
    return shards.get(0).queue;
  }

  @GuardedBy("this")
  private Shard openShard() throws IOException {
    Shard s = new Shard(opener.open(nextIndex), nextIndex);
    nextIndex++;
    shards.add(s);
    opened++;
    peak = Math.max(peak, shards.size());
    return s;
  }

  /**
   * A place for one more client queue pair: on the lowest queue with room, else on a new queue.
   *
   * @throws LimitReachedException when all {@code maxQueues} queues are full
   * @throws IOException when a new queue cannot be created
   */
  synchronized Slot acquire() throws LimitReachedException, IOException {
    if (shut) {
      throw new IOException("completion queues closed");
    }
    for (Shard s : shards) {
      if (s.used < perQueue) {
        return take(s);
      }
    }
    if (shards.size() >= maxQueues) {
      throw new LimitReachedException(
          queuePairs()
              + " queue pairs fill all "
              + shards.size()
              + " completion queues of "
              + perQueue
              + " queue pairs each (at most "
              + maxQueues
              + " queues)");
    }
    Shard s = openShard();
    LOG.info(
        "{} queue pairs fill every completion queue of {} each: opened completion queue {} "
            + "({} queues now)",
        queuePairs(),
        perQueue,
        s.index,
        shards.size());
    return take(s);
  }

  private Slot take(Shard s) {
    s.used++;
    return new Slot(s);
  }

  /**
   * The queue pair of {@code slot} is destroyed: its place is free. A queue other than the first
   * left empty is closed on the closer (or by {@link #close} when the closer no longer runs).
   */
  void release(Slot slot) {
    Shard emptied = null;
    synchronized (this) {
      if (slot.released) {
        return;
      }
      slot.released = true;
      Shard s = slot.shard;
      s.used--;
      if (s.used == 0 && s.index != 0 && !s.closed && !shut) {
        s.closed = true;
        shards.remove(s);
        closing.add(s);
        emptied = s;
      }
    }
    if (emptied != null) {
      Shard s = emptied;
      LOG.debug("{} is empty: closing it ({} queues left)", s, queues());
      try {
        closer.execute(() -> closeShard(s));
      } catch (RejectedExecutionException e) {
        LOG.debug("{} is left for the provider's close", s);
      }
    }
  }

  private void closeShard(Shard s) {
    synchronized (this) {
      if (s.closeStarted) {
        return;
      }
      s.closeStarted = true;
    }
    s.queue.close();
    synchronized (this) {
      // Under the lock, with the queue leaving the view of withQueues: totals never jump.
      afterClose.accept(s.queue);
      closing.remove(s);
      closedCount++;
    }
  }

  /** Queues open now. */
  synchronized int queues() {
    return shards.size();
  }

  /** Most queues open at once so far. */
  synchronized int peakQueues() {
    return peak;
  }

  /** Queues opened since start (the first included), and closed again. */
  synchronized long opened() {
    return opened;
  }

  synchronized long closed() {
    return closedCount;
  }

  /** Client queue pairs placed now. */
  synchronized int queuePairs() {
    int n = 0;
    for (Shard s : shards) {
      n += s.used;
    }
    return n;
  }

  /** Client queue pairs one queue holds. */
  int perQueue() {
    return perQueue;
  }

  /** Most queues this node opens. */
  int maxQueues() {
    return maxQueues;
  }

  /**
   * Runs {@code f} over every queue not closed yet (in use or closing), under the lock that {@code
   * afterClose} runs under, so counters summed here plus those kept by {@code afterClose} count
   * each queue exactly once.
   */
  synchronized <R> R withQueues(Function<List<Q>, R> f) {
    List<Q> out = new ArrayList<>(shards.size() + closing.size());
    for (Shard s : shards) {
      out.add(s.queue);
    }
    for (Shard s : closing) {
      out.add(s.queue);
    }
    return f.apply(out);
  }

  /**
   * Closes every queue not closed yet, the first last, including emptied ones the closer has not
   * closed. Every queue pair must be destroyed before; one still placed is reported.
   */
  void close() {
    List<Shard> all;
    synchronized (this) {
      if (shut) {
        return;
      }
      shut = true;
      int placed = queuePairs();
      if (placed > 0) {
        LOG.warn("closing the completion queues with {} client queue pairs still placed", placed);
      }
      for (int i = shards.size() - 1; i >= 0; i--) {
        Shard s = shards.get(i);
        s.closed = true;
        closing.add(s);
      }
      shards.clear();
      all = new ArrayList<>(closing);
    }
    for (Shard s : all) {
      closeShard(s);
    }
  }
}
