package io.memwire.flight;

import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.flight.wire.WireException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Ticket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One RDMA data-plane exchange on the server, from its DoExchange to its end. It runs the wrapped
 * producer's stream into a {@link LeasingListener}, keeps each batch's body leased (alive, in
 * regions registered for that lease alone) until the client's FREE, the end of the exchange, a
 * cancellation or the lease timeout, and ends the exchange once. The client's credit window bounds
 * the leased batches and bytes: {@code putNext} waits while it is full.
 *
 * <p>State: the {@link SessionMonitor} holds the {@link SessionState}, the window and the
 * producer's outcome and does every wait; this class acts on what it returns, outside its monitor
 * (ending leases, writing, running the producer's handlers). Threads: the DoExchange handler runs
 * {@link #run} (and, for a synchronous producer, {@code putNext} and the rest of the listener); a
 * pump thread reads the client's FREEs and half-close ({@link FreeReader}); the lease timer calls
 * {@link #checkLeases}; gRPC calls the cancel handler; a lease's body is released on the transport
 * thread that finishes its last read. Writes to the client go through the {@link ExchangeWriter},
 * whose lock is taken before the session's monitor, never inside it, so nothing is written once the
 * session has ENDED (the move to ENDED happens under both).
 */
final class ServerSession {
  private static final Logger LOG = LoggerFactory.getLogger(ServerSession.class);

  private final ServerResources resources;
  private final ExecutorService pumps;
  private final Consumer<ServerSession> onEnded;
  private final LeaseBodies bodies;
  private final FlightProducer.CallContext context;
  private final FlightStream reader;
  private final ExchangeWriter writer;
  private final ExchangeRequest request;
  private final long leaseTimeoutNanos;
  private final SessionMonitor monitor;

  private volatile Runnable onCancel;
  private volatile Runnable onReady;
  private Future<?> pump;

  /**
   * @param resources what the producer's exchanges share
   * @param pumps where the pump reading the client's messages runs
   * @param onEnded told once the session has ended (cancelled or ended), to stop tracking it
   */
  ServerSession(
      ServerResources resources,
      ExecutorService pumps,
      Consumer<ServerSession> onEnded,
      FlightProducer.CallContext context,
      FlightStream reader,
      FlightProducer.ServerStreamListener writer,
      ExchangeRequest request) {
    this.resources = resources;
    this.pumps = pumps;
    this.onEnded = onEnded;
    this.bodies = new LeaseBodies(resources, resources.bodyTap());
    this.context = context;
    this.reader = reader;
    this.request = request;
    this.leaseTimeoutNanos = resources.leaseTimeout().toNanos();
    this.monitor =
        new SessionMonitor(
            context.peerIdentity(),
            resources.stats(),
            Math.min(request.windowBatches(), resources.maxWindowBatches()),
            Math.min(request.windowBytes(), resources.maxWindowBytes()));
    this.writer = new ExchangeWriter(writer, resources.allocator(), monitor::isEnded);
  }

  /** Runs the exchange on the calling (DoExchange handler) thread until it ends. */
  void run() {
    writer.setOnCancelHandler(() -> cancel("client cancelled the exchange"));
    pump = pumps.submit(new FreeReader(reader, resources.stats(), new ClientEvents()));
    try {
      resources
          .delegate()
          .getStream(
              context,
              new Ticket(request.ticket()),
              new LeasingListener(this, monitor, writer, bodies, resources));
    } catch (Throwable t) {
      monitor.producerFailed(t);
    }
    try {
      SessionMonitor.ProducerOutcome outcome = monitor.awaitProducer();
      if (outcome == null) {
        return;
      }
      if (outcome.error() == null) {
        writer.send(ServerMessage.end(monitor.nextSeq()));
      }
      // Batches already described stay leased until the client has read them, also before a
      // producer error: ending the exchange revokes their guards and the client would drop them.
      if (!monitor.awaitDrained()) {
        return;
      }
      finish(outcome.error());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      finish(CallStatus.CANCELLED.withDescription("server shutting down").toRuntimeException());
    } catch (RuntimeException e) {
      finish(e);
    } finally {
      releaseAll();
    }
  }

  /** What the client's messages (read on the pump thread by {@link FreeReader}) do. */
  private final class ClientEvents implements FreeReader.Session {
    @Override
    public void freed(long seq) {
      LeaseWindow.Lease l = monitor.freed(seq);
      if (l != null) {
        // The credit comes back only once the guard is revoked and the body released: the
        // window bounds what is pinned, and the producer's next block can reuse this one. Null:
        // already released (end of exchange, timeout) or a duplicate FREE.
        endLease(l, true);
      }
    }

    @Override
    public void halfClosed() {
      monitor.clientHalfClosed();
    }

    @Override
    public void badMessage(WireException e) {
      finish(CallStatus.INVALID_ARGUMENT.withDescription(e.getMessage()).toRuntimeException());
    }

    @Override
    public void broken(RuntimeException e) {
      cancel("client stream ended: " + e.getMessage());
    }
  }

  /** Ends a lease taken out of the window: its guard, regions, then body. */
  private void endLease(LeaseWindow.Lease l, boolean freedByClient) {
    var unused =
        bodies
            .end(l.guard, l.body)
            .whenComplete(
                (v, e) -> {
                  if (e != null) {
                    LOG.warn("releasing the body of lease {} failed", l.seq, e);
                  }
                  boolean ready = monitor.released(l);
                  if (freedByClient) {
                    resources.stats().leasesFreed.increment();
                    Runnable r = onReady;
                    if (ready && r != null) {
                      r.run();
                    }
                  } else {
                    resources.stats().leasesReleasedUnfreed.increment();
                  }
                });
  }

  /** The producer's cancel handler, run once when the exchange is cancelled. */
  void setOnCancel(Runnable handler) {
    this.onCancel = handler;
  }

  /** The producer's ready handler, run when a FREE gives credit back. */
  void setOnReady(Runnable handler) {
    this.onReady = handler;
  }

  /**
   * Waits until the window has room for {@code bytes}; false when the session ended meanwhile or
   * the lease timeout passed first (then the exchange ends with TIMED_OUT).
   */
  boolean awaitCredit(long bytes) {
    SessionMonitor.Credit credit;
    try {
      credit = monitor.awaitCredit(bytes, leaseTimeoutNanos);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    if (credit == SessionMonitor.Credit.TIMED_OUT) {
      expire(
          "the client freed no lease within the lease timeout of "
              + leaseTimeoutNanos / 1_000_000
              + " ms while its window was full");
    }
    return credit == SessionMonitor.Credit.GRANTED;
  }

  /**
   * The producer completed. A zero-copy producer is held here until the client is done with its
   * leased-in-place buffers, which belong to the producer's allocator: it must not close that
   * allocator under a lease (bounded by the lease timeout).
   */
  void producerCompleted(boolean zeroCopy) {
    try {
      monitor.producerCompleted(zeroCopy, leaseTimeoutNanos);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Called by the producer's lease timer. */
  void checkLeases(long nowNanos) {
    LeaseWindow.Lease l = monitor.overdue(nowNanos, leaseTimeoutNanos);
    if (l != null) {
      expire(
          "lease "
              + l.seq
              + " was not freed within the lease timeout of "
              + leaseTimeoutNanos / 1_000_000
              + " ms");
    }
  }

  private void expire(String why) {
    resources.stats().leasesExpired.increment();
    LOG.warn("RDMA Flight exchange with {}: {}; ending it", context.peerIdentity(), why);
    finish(CallStatus.TIMED_OUT.withDescription(why).toRuntimeException());
  }

  /** A cancellation or crash of the client, or the producer closing: release, tell the producer. */
  void cancel(String why) {
    if (!monitor.moveToCancelled()) {
      return;
    }
    resources.stats().sessionsCancelled.increment();
    LOG.debug("RDMA Flight exchange cancelled: {}", why);
    releaseAll();
    Runnable h = onCancel;
    if (h != null) {
      h.run();
    }
    end();
  }

  /** Ends the exchange with success ({@code error == null}) or an error; runs once. */
  private void finish(Throwable error) {
    if (writer.isCancelled()) {
      // The client cancelled, and this thread noticed (a producer that stopped on isCancelled(),
      // a failed write) before gRPC ran the cancel handler: the same end, counted the same way.
      cancel("client cancelled the exchange");
      return;
    }
    if (!writer.end(error, monitor::moveToEnded)) {
      return;
    }
    releaseAll();
    end();
  }

  /** After the move to a terminal state: stops the pump and tells the producer. */
  private void end() {
    Future<?> p = pump;
    if (p != null && !monitor.isClientHalfClosed()) {
      p.cancel(true); // unblocks reader.next() if the client never half-closed
    }
    onEnded.accept(this);
  }

  private void releaseAll() {
    for (LeaseWindow.Lease l : monitor.removeAll()) {
      endLease(l, false);
    }
  }

  int leasedBatches() {
    return monitor.leasedBatches();
  }

  long leasedBytes() {
    return monitor.leasedBytes();
  }
}
