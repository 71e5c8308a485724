package io.memwire.flight;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.flight.wire.WireException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.Future;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.ArrowBuffer;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One RDMA data-plane exchange on the server. To the wrapped producer it is the stream listener of
 * a DoGet; to the client it sends one descriptor per batch and keeps each batch's body leased
 * (alive, in regions registered for that lease alone) until the client's FREE, the end of the
 * exchange, a cancellation or the lease timeout. The client's credit window ({@link LeaseWindow})
 * bounds the leased batches and bytes: {@code putNext} waits while the window is full.
 *
 * <p>State: one {@link SessionState}, moved only by {@link #moveTo} under this object's monitor,
 * which also guards the window and the producer's outcome. Threads: the DoExchange handler runs
 * {@link #run} (and, for a synchronous producer, {@code putNext} and the rest of the listener); a
 * pump thread of the producer's executor reads the client's FREEs and half-close; the producer's
 * lease timer calls {@link #checkLeases}; gRPC calls the cancel handler; a lease's body is released
 * on the transport thread that finishes its last read. Writes to the gRPC listener are serialized
 * by {@link #writerLock}, taken before the monitor, never inside it, so nothing is written once the
 * session has ENDED (the move to ENDED happens under both).
 */
final class ServerSession implements FlightProducer.ServerStreamListener {
  private static final Logger LOG = LoggerFactory.getLogger(ServerSession.class);

  private final RdmaFlightProducer owner;
  private final LeaseBodies bodies;
  private final FlightProducer.CallContext context;
  private final FlightStream reader;
  private final FlightProducer.ServerStreamListener writer;
  private final ExchangeRequest request;
  private final long leaseTimeoutNanos;

  /** Serializes calls of {@link #writer}; see the class comment for the order with the monitor. */
  private final Object writerLock = new Object();

  /** The leased batches and the client's credit; every call under this object's monitor. */
  private final LeaseWindow window;

  /** Written only by {@link #moveTo} under this object's monitor; read anywhere. */
  private volatile SessionState state = SessionState.STREAMING;

  /**
   * Why the producer failed, set by {@link #error} with the move to DRAINING; null if it did not.
   */
  @GuardedBy("this")
  private Throwable producerError;

  private volatile boolean zeroCopy;
  private volatile Runnable onCancel;
  private volatile Runnable onReady;
  private VectorUnloader unloader;
  private IpcOption option = IpcOption.DEFAULT;
  private Future<?> pump;

  ServerSession(
      RdmaFlightProducer owner,
      FlightProducer.CallContext context,
      FlightStream reader,
      FlightProducer.ServerStreamListener writer,
      ExchangeRequest request) {
    this.owner = owner;
    this.bodies = new LeaseBodies(owner);
    this.context = context;
    this.reader = reader;
    this.writer = writer;
    this.request = request;
    this.window =
        new LeaseWindow(
            this,
            Math.min(request.windowBatches(), owner.maxWindowBatches()),
            Math.min(request.windowBytes(), owner.maxWindowBytes()));
    this.leaseTimeoutNanos = owner.leaseTimeout().toNanos();
  }

  /**
   * Moves to {@code to}; the caller holds the monitor and has checked the state is not terminal.
   */
  private void moveTo(SessionState to) {
    assert Thread.holdsLock(this);
    SessionState from = state;
    state = from.moveTo(to);
    LOG.debug("RDMA exchange with {}: {} -> {}", context.peerIdentity(), from, to);
    notifyAll();
  }

  /** Runs the exchange on the calling (DoExchange handler) thread until it ends. */
  void run() {
    writer.setOnCancelHandler(() -> cancel("client cancelled the exchange"));
    pump = owner.executor().submit(new FreeReader(reader, owner.serverStats(), new ClientEvents()));
    try {
      owner.delegate().getStream(context, new Ticket(request.ticket()), this);
    } catch (Throwable t) {
      error(t);
    }
    try {
      Throwable outcome;
      synchronized (this) {
        // An asynchronous producer finishes later: completed(), error() or the end move the
        // state, and every move notifies.
        while (state == SessionState.STREAMING) {
          wait();
        }
        if (state.isTerminal()) {
          return;
        }
        outcome = producerError;
      }
      if (outcome == null) {
        send(ServerMessage.end(nextSeq()));
      }
      synchronized (this) {
        // Batches already described stay leased until the client has read them, also before a
        // producer error: ending the exchange revokes their guards and the client would drop
        // them. The lease timer bounds this wait: an overdue lease ends the session. A released
        // lease, the client's half-close and every move of the state notify.
        while (window.awaitsFrees() && state == SessionState.DRAINING) {
          wait();
        }
        if (state.isTerminal()) {
          return;
        }
      }
      finish(outcome);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      finish(CallStatus.CANCELLED.withDescription("server shutting down").toRuntimeException());
    } catch (RuntimeException e) {
      finish(e);
    } finally {
      releaseAll();
    }
  }

  // ---- client messages (pump thread, through FreeReader) --------------------------------

  /** What the client's messages do to this session. */
  private final class ClientEvents implements FreeReader.Session {
    @Override
    public void freed(long seq) {
      LeaseWindow.Lease l;
      synchronized (ServerSession.this) {
        l = window.remove(seq);
        ServerSession.this.notifyAll(); // run() may wait for the last lease to be freed
      }
      if (l != null) {
        // The credit comes back only once the guard is revoked and the body released: the
        // window bounds what is pinned, and the producer's next block can reuse this one. Null:
        // already released (end of exchange, timeout) or a duplicate FREE.
        endLease(l, true);
      }
    }

    @Override
    public void halfClosed() {
      synchronized (ServerSession.this) {
        window.clientHalfClosed();
        ServerSession.this.notifyAll();
      }
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
                  boolean ready;
                  synchronized (this) {
                    window.released(l);
                    ready = window.hasCredit(0);
                    notifyAll();
                  }
                  if (freedByClient) {
                    owner.serverStats().leasesFreed.increment();
                    Runnable r = onReady;
                    if (ready && r != null) {
                      r.run();
                    }
                  } else {
                    owner.serverStats().leasesReleasedUnfreed.increment();
                  }
                });
  }

  // ---- ServerStreamListener seen by the wrapped producer ----------------------------------

  @Override
  public boolean isCancelled() {
    return state.isTerminal() || writer.isCancelled();
  }

  @Override
  public void setOnCancelHandler(Runnable handler) {
    this.onCancel = handler;
  }

  @Override
  public boolean isReady() {
    synchronized (this) {
      if (!window.hasCredit(0)) {
        return false;
      }
    }
    return writer.isReady();
  }

  @Override
  public void setOnReadyHandler(Runnable handler) {
    this.onReady = handler;
    writer.setOnReadyHandler(handler);
  }

  @Override
  public void setUseZeroCopy(boolean enabled) {
    this.zeroCopy = enabled;
  }

  @Override
  public void start(VectorSchemaRoot root, DictionaryProvider dictionaries, IpcOption option) {
    synchronized (writerLock) {
      writer.start(root, dictionaries, option);
    }
    this.option = option;
    this.unloader = new VectorUnloader(root, true, owner.codec(), true);
  }

  @Override
  public void putNext() {
    putNext(null);
  }

  @Override
  public void putNext(ArrowBuf metadata) {
    try {
      if (unloader == null) {
        throw CallStatus.INTERNAL
            .withDescription("Stream was not started, call start()")
            .toRuntimeException();
      }
      if (isCancelled()) {
        return;
      }
      byte[] appMetadata = bytesOf(metadata);
      try (ArrowRecordBatch batch = unloader.getRecordBatch()) {
        lease(batch, appMetadata);
      }
    } finally {
      if (metadata != null) {
        metadata.close();
      }
    }
  }

  private void lease(ArrowRecordBatch batch, byte[] appMetadata) {
    ByteBuffer fb = MessageSerializer.serializeMetadata(batch, option);
    byte[] header = new byte[fb.remaining()];
    fb.get(header);
    long bodyLength = batch.computeBodyLength();
    List<ArrowBuf> bufs = batch.getBuffers();
    List<ArrowBuffer> layout = batch.getBuffersLayout();
    if (!awaitCredit(bodyLength)) {
      return;
    }
    LeaseBodies.Prepared lease = bodies.prepare(bufs, layout, bodyLength, zeroCopy);
    long seq = -1;
    long leased = 0;
    synchronized (this) {
      if (!state.isTerminal()) {
        seq = window.add(bodyLength, lease.guard(), lease.body()).seq;
        leased = window.leasedBytes();
      }
    }
    if (seq < 0) {
      // Ended while the body was prepared: release it here, outside the monitor.
      var unused = bodies.end(lease.guard(), lease.body());
      return;
    }
    owner.serverStats().notePeak(leased);
    owner.serverStats().bodyBytes.add(bodyLength);
    send(
        ServerMessage.batch(
            seq,
            (int) Math.min(Integer.MAX_VALUE, leaseTimeoutNanos / 1_000_000),
            header,
            bodyLength,
            lease.regions(),
            lease.refs(),
            appMetadata,
            lease.guardRef()));
  }

  /** Waits until the window has room for {@code bytes}; false when the session ended meanwhile. */
  private boolean awaitCredit(long bytes) {
    long deadline = System.nanoTime() + leaseTimeoutNanos;
    synchronized (this) {
      boolean waited = false;
      while (!state.isTerminal() && !window.hasCredit(bytes)) {
        if (!waited) {
          owner.serverStats().creditWaits.increment();
          waited = true;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      if (state.isTerminal()) {
        return false;
      }
      if (window.hasCredit(bytes)) {
        return true;
      }
    }
    expire(
        "the client freed no lease within the lease timeout of "
            + leaseTimeoutNanos / 1_000_000
            + " ms while its window was full");
    return false;
  }

  private synchronized long nextSeq() {
    return window.nextSeq();
  }

  @Override
  public void putMetadata(ArrowBuf metadata) {
    try {
      if (isCancelled()) {
        return;
      }
      send(ServerMessage.metadata(nextSeq(), bytesOf(metadata)));
    } finally {
      if (metadata != null) {
        metadata.close();
      }
    }
  }

  @Override
  public synchronized void error(Throwable ex) {
    if (producerError == null) {
      producerError = ex;
    }
    if (state == SessionState.STREAMING) {
      moveTo(SessionState.DRAINING); // run() ends the exchange once the sent batches are read
    }
  }

  @Override
  public void completed() {
    synchronized (this) {
      if (state == SessionState.STREAMING) {
        moveTo(SessionState.DRAINING);
      }
      if (!zeroCopy) {
        return;
      }
      // Leased-in-place buffers belong to the producer's allocator: hold the producer here until
      // the client is done with them, so it does not close that allocator under a lease.
      long deadline = System.nanoTime() + leaseTimeoutNanos;
      long left;
      while (!window.isIdle() && !state.isTerminal() && (left = deadline - System.nanoTime()) > 0) {
        try {
          wait(Math.max(1, left / 1_000_000)); // a released lease and every move notify
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  // ---- sending and ending -----------------------------------------------------------------

  private void send(ServerMessage m) {
    ArrowBuf buf = owner.allocator().buffer(m.encodedSize());
    try {
      m.encode(buf.nioBuffer(0, m.encodedSize()));
      buf.writerIndex(m.encodedSize());
      synchronized (writerLock) {
        if (state.isTerminal()) {
          buf.close();
          return;
        }
        writer.putMetadata(buf); // Flight takes ownership of buf
      }
    } catch (RuntimeException e) {
      if (buf.getReferenceManager().getRefCount() > 0) {
        buf.close();
      }
      throw e;
    }
  }

  /** Called by the producer's lease timer. */
  void checkLeases(long nowNanos) {
    long oldest;
    synchronized (this) {
      LeaseWindow.Lease l = window.oldest();
      if (l == null || nowNanos - l.sentNanos <= leaseTimeoutNanos) {
        return;
      }
      oldest = l.seq;
    }
    expire(
        "lease "
            + oldest
            + " was not freed within the lease timeout of "
            + leaseTimeoutNanos / 1_000_000
            + " ms");
  }

  private void expire(String why) {
    owner.serverStats().leasesExpired.increment();
    LOG.warn("RDMA Flight exchange with {}: {}; ending it", context.peerIdentity(), why);
    finish(CallStatus.TIMED_OUT.withDescription(why).toRuntimeException());
  }

  /** A cancellation or crash of the client, or the producer closing: release, tell the producer. */
  void cancel(String why) {
    synchronized (this) {
      if (state.isTerminal()) {
        return;
      }
      moveTo(SessionState.CANCELLED);
    }
    owner.serverStats().sessionsCancelled.increment();
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
    synchronized (writerLock) {
      synchronized (this) {
        if (state.isTerminal()) {
          return;
        }
        moveTo(SessionState.ENDED);
      }
      try {
        if (error == null) {
          writer.completed();
        } else {
          writer.error(error);
        }
      } catch (RuntimeException e) {
        LOG.debug("ending the exchange failed", e);
      }
    }
    releaseAll();
    end();
  }

  /** After the move to a terminal state: stops the pump and tells the producer. */
  private void end() {
    Future<?> p = pump;
    boolean halfClosed;
    synchronized (this) {
      halfClosed = window.isClientHalfClosed();
    }
    if (p != null && !halfClosed) {
      p.cancel(true); // unblocks reader.next() if the client never half-closed
    }
    owner.sessionEnded(this);
  }

  private void releaseAll() {
    List<LeaseWindow.Lease> left;
    synchronized (this) {
      left = window.removeAll();
      notifyAll();
    }
    for (LeaseWindow.Lease l : left) {
      endLease(l, false);
    }
  }

  synchronized int leasedBatches() {
    return window.leasedBatches();
  }

  synchronized long leasedBytes() {
    return window.leasedBytes();
  }

  private static byte[] bytesOf(ArrowBuf b) {
    if (b == null || b.readableBytes() == 0) {
      return null;
    }
    byte[] out = new byte[(int) b.readableBytes()];
    b.getBytes(b.readerIndex(), out);
    return out;
  }
}
