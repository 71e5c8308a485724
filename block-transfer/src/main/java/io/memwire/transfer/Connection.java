package io.memwire.transfer;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.spi.ProviderConnection;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Reads from one peer. Requests are checked, split at segment boundaries and at the maximum
 * transfer size, and handed to the connection's {@link ReadQueue}, which posts them to the
 * transport while the connection stays within its limits on reads and bytes in flight. Futures
 * complete on the transport's I/O thread (or, when the connection fails, on the thread that failed
 * it): chain only short, non-blocking work on them.
 *
 * <p>The connection's state is its provider connection's ({@link ProviderConnection#failure()}):
 * one state, no copy here. A connection error on any read fails the provider connection, and the
 * queue fails what it still holds.
 *
 * <p>Connections are owned and cached by the {@link TransferNode}; a failed connection stays failed
 * and {@link TransferNode#connection} opens a fresh one. When the node may hand one out or retire
 * it as idle is its {@link ConnectionLifecycle}'s to decide.
 */
public final class Connection {
  private final TransferNode node;
  private final ProviderConnection transport;
  private final int maxTransfer;
  private final ReadQueue queue;
  private final ConnectionLifecycle lifecycle;

  Connection(
      TransferNode node,
      ProviderConnection transport,
      TransferConfig config,
      int deviceCap,
      NanoClock clock) {
    this.node = node;
    this.transport = transport;
    this.maxTransfer = config.maxTransferSize();
    this.queue = new ReadQueue(this, node, transport, config, deviceCap, clock);
    this.lifecycle =
        new ConnectionLifecycle(transport, queue, config.connectionIdleTimeout(), clock);
  }

  public InetSocketAddress peer() {
    return transport.peer();
  }

  /** False once the connection failed, was closed or was retired as idle. */
  public boolean isOpen() {
    return !queue.isRetired() && transport.isOpen();
  }

  /** See {@link ConnectionLifecycle#claim}. */
  boolean claim(long nowNanos) {
    return lifecycle.claim(nowNanos);
  }

  /** See {@link ConnectionLifecycle#retireIfIdle}. */
  boolean retireIfIdle(long nowNanos, long idleNanos) {
    return lifecycle.retireIfIdle(nowNanos, idleNanos);
  }

  /** True once the provider connection failed or closed and every read on it has ended. */
  boolean isDone() {
    return lifecycle.isDone();
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
    queue.enqueue(pieces);
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
      new ReadGate(queue, afterPieces).track(bodyPieces);
      queue.enqueue(bodyPieces);
    } else {
      queue.enqueue(bodyPieces);
      // Fails the after read itself when the body fails; nothing to learn from the returned stage.
      var unused =
          bodyDone.whenComplete(
              (v, e) -> {
                if (e == null) {
                  queue.enqueue(afterPieces);
                } else {
                  Throwable c = transferCause(e);
                  queue.failAll(
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
    lifecycle.requestsStarted(n);
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
    if (r.destination() != null && r.destination().memory() != node.registrations()) {
      throw new IllegalArgumentException("destination region is not registered on this node");
    }
    PendingRead req = new PendingRead(r, lifecycle::requestEnded);
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
      out.add(new ReadPiece(queue, req, d, d.address() + within, n, done));
      req.parts++;
      done += n;
      pos += n;
      if (within + n == d.length()) {
        seg++;
      }
    }
  }

  /**
   * Called by the node's timer: fails the connection when its oldest read is overdue, and fails
   * whatever is still queued on a connection that has failed.
   */
  void checkTimeout(long nowNanos) {
    queue.checkTimeout(nowNanos);
  }

  /** Reads queued or in flight. */
  public int outstanding() {
    return queue.outstanding();
  }

  /** Closes the transport; reads in flight fail with a connection error. */
  void close() {
    transport.close();
    queue.pump(); // the transport has failed: this drains the queue
  }
}
