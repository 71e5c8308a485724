package io.memwire.transfer;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.WireRead;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reads from one peer. Requests are split at segment boundaries and at the maximum transfer size,
 * queued, and posted to the transport while the connection stays within its limits on reads and
 * bytes in flight (like a queue pair's send-queue depth); completions let the next ones go. Futures
 * complete on the transport's I/O thread (or, when the connection fails, on the thread that failed
 * it): chain only short, non-blocking work on them.
 *
 * <p>The connection's state is its provider connection's ({@link ProviderConnection#failure()}):
 * one state, no copy here. A connection error on any read fails the provider connection; the queue
 * is checked against that state and drained under {@link #lock}, so a batch is either failed by the
 * drain or sees the failure itself, never left queued. Nothing is called out of this class (posts,
 * completions) while holding the lock.
 *
 * <p>Connections are owned and cached by the {@link TransferNode}; a failed connection stays failed
 * and {@link TransferNode#connection} opens a fresh one.
 *
 * <p>Idle reaping ({@link TransferConfig#connectionIdleTimeout()}) adds one more way to end: the
 * node's reaper {@linkplain #retireIfIdle retires} a connection only under {@link #lock}, only when
 * no request is open on it and nothing touched it for the timeout. Being handed out by {@link
 * TransferNode#connection} ({@link #claim}) and the end of every request touch it; a claim and a
 * retirement exclude each other under the lock, so a connection the node just handed out is never
 * retired within the timeout, and once retired no read is queued on it: a read that arrives later
 * fails at once, unsent, with {@link ConnectionReapedException}. The provider connection is closed
 * after the retirement, with nothing outstanding, so no read ever fails because of the reaper.
 */
public final class Connection {
  private final TransferNode node;
  private final ProviderConnection transport;
  private final int maxReads;
  private final long maxBytes;
  private final int maxTransfer;
  private final long readTimeoutNanos;
  private final java.time.Duration idleTimeout;

  /** Requests accepted by {@link #read} and not yet completed or failed. */
  private final AtomicInteger openRequests = new AtomicInteger();

  /**
   * When the connection was last handed out or a request on it ended ({@link System#nanoTime});
   * only moves forward.
   */
  private final AtomicLong lastUsedNanos = new AtomicLong(System.nanoTime());

  /** Set once, under {@link #lock}, when the idle reaper retired this connection. */
  private volatile boolean reaped;

  private final Object lock = new Object();

  @GuardedBy("lock")
  private final ArrayDeque<ReadPiece> queued = new ArrayDeque<>();

  @GuardedBy("lock")
  private final LinkedHashSet<PostedRead> inFlight = new LinkedHashSet<>();

  @GuardedBy("lock")
  private long inFlightBytes;

  /** The request at the head of the queue while the pool grows for it off this thread, or null. */
  @GuardedBy("lock")
  private PendingRead awaitingMemory;

  Connection(
      TransferNode node, ProviderConnection transport, TransferConfig config, int deviceCap) {
    this.node = node;
    this.transport = transport;
    this.maxReads = Math.min(config.maxOutstandingRequests(), deviceCap);
    this.maxBytes = config.maxOutstandingBytes();
    this.maxTransfer = config.maxTransferSize();
    this.readTimeoutNanos = config.readTimeout().toNanos();
    this.idleTimeout = config.connectionIdleTimeout();
  }

  public InetSocketAddress peer() {
    return transport.peer();
  }

  /** False once the connection failed, was closed or was retired as idle. */
  public boolean isOpen() {
    return !reaped && transport.isOpen();
  }

  /**
   * The node hands this connection out: true, and it counts as used now, unless it already failed
   * or was retired (then the node opens a fresh one). Excludes {@link #retireIfIdle} under the
   * lock.
   */
  boolean claim(long nowNanos) {
    if (idleTimeout.isZero()) {
      return transport.failure() == null; // no reaper: nothing to exclude, no lock
    }
    synchronized (lock) {
      if (reaped || transport.failure() != null) {
        return false;
      }
      touch(nowNanos);
      return true;
    }
  }

  /**
   * The node's reaper: retires this connection when it is open, has no request open and was not
   * used for {@code idleNanos}; true when this call retired it (the caller then closes it). After
   * that nothing is ever queued here.
   */
  boolean retireIfIdle(long nowNanos, long idleNanos) {
    synchronized (lock) {
      // Requests first: a request ends by touching, then leaving the count.
      if (reaped
          || openRequests.get() != 0
          || nowNanos - lastUsedNanos.get() < idleNanos
          || !queued.isEmpty()
          || !inFlight.isEmpty()
          || transport.failure() != null) {
        return false;
      }
      reaped = true;
      return true;
    }
  }

  /** True once the provider connection failed or closed and every read on it has ended. */
  boolean isDone() {
    return transport.failure() != null && openRequests.get() == 0;
  }

  private void touch(long nowNanos) {
    lastUsedNanos.accumulateAndGet(nowNanos, (prev, now) -> now - prev > 0 ? now : prev);
  }

  /** A request ended: the connection was used now, then one fewer request is open. */
  private void requestEnded() {
    touch(System.nanoTime());
    openRequests.decrementAndGet();
  }

  /** Reads one range. */
  public CompletableFuture<TransferBuffer> read(ReadRequest request) {
    return read(List.of(request)).result(0);
  }

  /**
   * Posts a batch; reads for one peer go out together, in order, within the flow-control limits.
   */
  public ReadBatch read(List<ReadRequest> requests) {
    List<ReadPiece> pieces = new ArrayList<>();
    List<CompletableFuture<TransferBuffer>> futures = requests(requests, pieces);
    started(requests.size());
    enqueue(pieces);
    return new ReadBatch(futures);
  }

  /**
   * Posts {@code body} and an {@code after} read that observes the remote memory no earlier than
   * the completion of every body read: when it reads, each body read has finished reading its
   * bytes. A word the serving side changes before it reuses the body's memory can so prove that the
   * body bytes were read before that change (Flight's lease guard).
   *
   * <p>How depends on the provider ({@link ProviderConnection#servesInPostOrder()}): where the peer
   * serves reads in posting order (tcp) the {@code after} read is posted right behind the body, in
   * the same round trip; elsewhere (verbs, the in-memory test transport) it is posted once every
   * body read has completed.
   *
   * @return the body's futures in order, then the {@code after} read's (last). When a body read
   *     fails, the {@code after} future fails with that error (whether or not it was read).
   */
  public ReadBatch read(List<ReadRequest> body, ReadRequest after) {
    if (body.isEmpty()) {
      return read(List.of(after));
    }
    List<ReadPiece> bodyPieces = new ArrayList<>();
    List<CompletableFuture<TransferBuffer>> futures = requests(body, bodyPieces);
    List<ReadPiece> afterPieces = new ArrayList<>();
    PendingRead afterRequest = request(after, afterPieces);
    started(body.size() + 1);
    CompletableFuture<Void> bodyDone =
        CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0]));
    if (transport.servesInPostOrder()) {
      // Queued only once every body piece was handed to the transport (or failed), so it is
      // posted behind all of them whichever thread posts what.
      new ReadGate(this, afterPieces).track(bodyPieces);
      enqueue(bodyPieces);
    } else {
      enqueue(bodyPieces);
      // Fails the after read itself when the body fails; nothing to learn from the returned stage.
      var unused =
          bodyDone.whenComplete(
              (v, e) -> {
                if (e == null) {
                  enqueue(afterPieces);
                } else {
                  Throwable c = transferCause(e);
                  failAll(
                      afterPieces,
                      c instanceof TransferException
                          ? (TransferException) c
                          : new TransferConnectionException("a body read failed: " + c, peer(), c));
                }
              });
    }
    CompletableFuture<TransferBuffer> afterResult = new CompletableFuture<>();
    // Both callbacks end in afterResult, the future the caller holds.
    var unused =
        afterRequest.future.whenComplete(
            (buf, e) -> {
              var unusedInner =
                  bodyDone.whenComplete(
                      (v, bodyError) -> {
                        if (bodyError != null) {
                          if (buf != null) {
                            buf.release();
                          }
                          afterResult.completeExceptionally(transferCause(bodyError));
                        } else if (e != null) {
                          afterResult.completeExceptionally(transferCause(e));
                        } else if (!afterResult.complete(buf)) {
                          buf.release();
                        }
                      });
            });
    List<CompletableFuture<TransferBuffer>> all = new ArrayList<>(futures);
    all.add(afterResult);
    return new ReadBatch(all);
  }

  /** Counts {@code n} accepted requests, once all of a call's requests passed their checks. */
  private void started(int n) {
    openRequests.addAndGet(n);
    node.counters().requestsStarted(n);
  }

  private static Throwable transferCause(Throwable e) {
    return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
  }

  /** Checks a request against this connection and splits it into pieces. */
  private PendingRead request(ReadRequest r, List<ReadPiece> pieces) {
    if (!r.region().node().equals(peer())) {
      throw new IllegalArgumentException(
          "region " + r.region() + " is not on this connection's peer " + peer());
    }
    if (r.destination() != null && r.destination().memory() != node.nodeMemory()) {
      throw new IllegalArgumentException("destination region is not registered on this node");
    }
    PendingRead req = new PendingRead(r, this::requestEnded);
    split(req, pieces);
    return req;
  }

  /** Checks and splits {@code requests} into {@code pieces}; their futures, in order. */
  private List<CompletableFuture<TransferBuffer>> requests(
      List<ReadRequest> requests, List<ReadPiece> pieces) {
    List<CompletableFuture<TransferBuffer>> futures = new ArrayList<>(requests.size());
    for (ReadRequest r : requests) {
      futures.add(request(r, pieces).future);
    }
    return futures;
  }

  /** Queues pieces and pumps, or fails them when the connection is no longer open. */
  void enqueue(List<ReadPiece> pieces) {
    TransferException f = null;
    boolean wasReaped;
    synchronized (lock) {
      wasReaped = reaped;
      if (!wasReaped && transport.isOpen()) {
        queued.addAll(pieces);
      } else if (!wasReaped) {
        f = failureOrClosed();
      }
    }
    if (wasReaped) {
      f = new ConnectionReapedException(peer(), idleTimeout);
      node.readOnReapedConnection(this);
    }
    if (f != null) {
      failAll(pieces, f);
    } else {
      pump();
    }
  }

  private void split(PendingRead req, List<ReadPiece> out) {
    RemoteRegion region = req.request.region();
    long pos = req.request.offset();
    int done = 0;
    int total = req.request.length();
    int seg = region.segmentIndex(pos);
    while (done < total) {
      RegionDescriptor d = region.segments().get(seg);
      long within = pos - region.segmentStart(seg);
      int n = (int) Math.min(Math.min(total - done, d.length() - within), maxTransfer);
      out.add(new ReadPiece(this, req, d, d.address() + within, n, done));
      req.parts++;
      done += n;
      pos += n;
      if (within + n == d.length()) {
        seg++;
      }
    }
  }

  /**
   * Moves queued pieces into flight while the limits allow, then posts them as one batch. Runs on
   * posting threads and on the transport's I/O thread (after a completion), so it takes only
   * destination memory that is free: when the pool must grow for the head of the queue, the queue
   * waits while the pool's thread grows it, then pumps again.
   */
  private void pump() {
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
          part = p.toPart(node);
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
                peer(),
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

  private void failAll(List<ReadPiece> pieces, TransferException error) {
    assert !Thread.holdsLock(lock) : "completing requests while holding the connection lock";
    for (ReadPiece p : pieces) {
      p.request.partDone(error, node);
      p.leftQueue();
    }
  }

  private TransferException failureOrClosed() {
    TransferException f = transport.failure();
    return f != null ? f : new TransferConnectionException("connection is closed", peer(), null);
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
                  + " ms",
              peer()));
    }
  }

  /** Reads queued or in flight. */
  public int outstanding() {
    synchronized (lock) {
      return queued.size() + inFlight.size();
    }
  }

  /** Closes the transport; reads in flight fail with a connection error. */
  void close() {
    transport.close();
    pump(); // the transport has failed: this drains the queue
  }
}
