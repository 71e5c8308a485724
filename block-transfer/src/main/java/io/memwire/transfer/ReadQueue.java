package io.memwire.transfer;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.WireRead;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * A {@link Connection}'s flow control: pieces wait here until the connection is under its limits on
 * reads and bytes in flight (like a queue pair's send-queue depth) and their destination memory is
 * free, then go to the transport as one batch; each completion lets the next ones go.
 *
 * <p>The queue is checked against the provider connection's state ({@link
 * ProviderConnection#failure()}) and drained under {@link #lock}, so a batch is either failed by
 * the drain or sees the failure itself, never left queued. Nothing is called out of this class
 * (posts, completions) while holding the lock. The same lock makes the idle reaper's retirement
 * ({@link ConnectionLifecycle}) exclude queueing: once {@linkplain #retireLocked retired}, nothing
 * is queued here again.
 */
final class ReadQueue {
  private final Connection connection;
  private final TransferNode node;
  private final ProviderConnection transport;
  private final int maxReads;
  private final long maxBytes;
  private final long readTimeoutNanos;
  private final Duration idleTimeout;

  /** The node's clock: posted reads are stamped on it, {@link #checkTimeout} is given its now. */
  private final NanoClock clock;

  /** Guards the queue, the reads in flight and the retirement. */
  final Object lock = new Object();

  /** Set once, under {@link #lock}, when the idle reaper retired the connection. */
  private volatile boolean retired;

  @GuardedBy("lock")
  private final ArrayDeque<ReadPiece> queued = new ArrayDeque<>();

  @GuardedBy("lock")
  private final LinkedHashSet<PostedRead> inFlight = new LinkedHashSet<>();

  @GuardedBy("lock")
  private long inFlightBytes;

  /** The request at the head of the queue while the pool grows for it off this thread, or null. */
  @GuardedBy("lock")
  private PendingRead awaitingMemory;

  ReadQueue(
      Connection connection,
      TransferNode node,
      ProviderConnection transport,
      TransferConfig config,
      int deviceCap,
      NanoClock clock) {
    this.connection = connection;
    this.clock = clock;
    this.node = node;
    this.transport = transport;
    this.maxReads = Math.min(config.maxOutstandingRequests(), deviceCap);
    this.maxBytes = config.maxOutstandingBytes();
    this.readTimeoutNanos = config.readTimeout().toNanos();
    this.idleTimeout = config.connectionIdleTimeout();
  }

  /** True once the idle reaper retired the connection. */
  boolean isRetired() {
    return retired;
  }

  /** True when nothing is queued or in flight. */
  @GuardedBy("lock")
  boolean isEmptyLocked() {
    return queued.isEmpty() && inFlight.isEmpty();
  }

  /** The idle reaper retired the connection: nothing is queued here again. */
  @GuardedBy("lock")
  void retireLocked() {
    retired = true;
  }

  /** Queues pieces and pumps, or fails them when the connection is no longer open. */
  void enqueue(List<ReadPiece> pieces) {
    TransferException f = null;
    boolean wasReaped;
    synchronized (lock) {
      wasReaped = retired;
      if (!wasReaped && transport.isOpen()) {
        queued.addAll(pieces);
      } else if (!wasReaped) {
        f = failureOrClosed();
      }
    }
    if (wasReaped) {
      f = new ConnectionReapedException(connection.peer(), idleTimeout);
      node.readOnReapedConnection(connection);
    }
    if (f != null) {
      failAll(pieces, f);
    } else {
      pump();
    }
  }

  /**
   * Moves queued pieces into flight while the limits allow, then posts them as one batch. Runs on
   * posting threads and on the transport's I/O thread (after a completion), so it takes only
   * destination memory that is free: when the pool must grow for the head of the queue, the queue
   * waits while the pool's thread grows it, then pumps again.
   */
  void pump() {
    List<WireRead> post = null;
    List<ReadPiece> drained = null;
    List<ReadPiece> noMemory = null;
    RuntimeException noMemoryCause = null;
    PendingRead needsMemory = null;
    TransferException failed;
    synchronized (lock) {
      failed = transport.failure();
      if (failed != null) {
        drained = drainQueued();
      }
      while (failed == null && !queued.isEmpty()) {
        ReadPiece p = queued.peek();
        boolean fits =
            inFlight.size() < maxReads
                && (inFlight.isEmpty() || inFlightBytes + p.length <= maxBytes);
        if (!fits || awaitingMemory == p.request) {
          break; // the pool's thread is taking this request's memory, and pumps when it has
        }
        PostedRead part;
        try {
          part = p.toPart(node, clock.nanoTime());
        } catch (RuntimeException e) {
          queued.poll();
          if (noMemory == null) {
            noMemory = new ArrayList<>();
          }
          noMemory.add(p);
          noMemoryCause = e;
          continue;
        }
        if (part == null) {
          if (awaitingMemory == null) {
            awaitingMemory = p.request;
            needsMemory = p.request;
          }
          break;
        }
        queued.poll();
        inFlight.add(part);
        inFlightBytes += p.length;
        if (post == null) {
          post = new ArrayList<>();
        }
        post.add(part);
      }
    }
    if (drained != null) {
      failAll(drained, failed);
    }
    if (noMemory != null) {
      for (ReadPiece p : noMemory) {
        p.request.partDone(
            new TransferConnectionException(
                "no destination memory for a read of "
                    + p.length
                    + " bytes: "
                    + noMemoryCause.getMessage(),
                connection.peer(),
                noMemoryCause),
            node);
        p.leftQueue();
      }
    }
    if (post != null) {
      assert !Thread.holdsLock(lock) : "posting while holding the connection lock";
      transport.post(post);
      for (WireRead w : post) {
        ((PostedRead) w).piece.leftQueue();
      }
    }
    if (needsMemory != null) {
      PendingRead r = needsMemory;
      node.bufferPool()
          .growOffIoThread(
              () -> {
                try {
                  r.reserveDestination(node);
                } finally {
                  synchronized (lock) {
                    awaitingMemory = null;
                  }
                  pump();
                }
              });
    }
  }

  /** Empties the queue. */
  @GuardedBy("lock")
  private List<ReadPiece> drainQueued() {
    List<ReadPiece> drained = new ArrayList<>(queued);
    queued.clear();
    return drained;
  }

  void partEnded(PostedRead part, TransferException error) {
    boolean broken = error != null && !(error instanceof RemoteAccessException);
    if (broken) {
      // The transport is broken: fail it (the first failure wins; a no-op when it is already
      // failing) before draining, so that any later read sees the failure under the lock.
      transport.fail(error);
    }
    List<ReadPiece> drained = null;
    synchronized (lock) {
      if (inFlight.remove(part)) {
        inFlightBytes -= part.length();
      }
      if (broken) {
        drained = drainQueued();
      }
    }
    if (drained != null) {
      failAll(drained, failureOrClosed());
    }
    part.piece.request.partDone(error, node);
    if (!broken) {
      pump();
    }
  }

  /** Fails pieces that never reached the transport. */
  void failAll(List<ReadPiece> pieces, TransferException error) {
    assert !Thread.holdsLock(lock) : "completing requests while holding the connection lock";
    for (ReadPiece p : pieces) {
      p.request.partDone(error, node);
      p.leftQueue();
    }
  }

  private TransferException failureOrClosed() {
    TransferException f = transport.failure();
    return f != null
        ? f
        : new TransferConnectionException("connection is closed", connection.peer(), null);
  }

  /**
   * Called by the node's timer: fails the connection when its oldest read is overdue, and fails
   * whatever is still queued on a connection that has failed.
   */
  void checkTimeout(long nowNanos) {
    PostedRead oldest;
    boolean stale;
    synchronized (lock) {
      oldest = inFlight.isEmpty() ? null : inFlight.iterator().next();
      stale = !queued.isEmpty() && transport.failure() != null;
    }
    if (stale) {
      pump(); // a safety net: read() and the failure path keep a failed queue empty
    }
    if (oldest != null && nowNanos - oldest.postedNanos > readTimeoutNanos) {
      transport.fail(
          new TransferTimeoutException(
              "read of "
                  + oldest.length()
                  + " bytes from "
                  + oldest.source()
                  + " did not complete within "
                  + readTimeoutNanos / 1_000_000
                  + " ms"
                  + transport.stallDetail(),
              connection.peer()));
    }
  }

  /** Reads queued or in flight. */
  int outstanding() {
    synchronized (lock) {
      return queued.size() + inFlight.size();
    }
  }
}
