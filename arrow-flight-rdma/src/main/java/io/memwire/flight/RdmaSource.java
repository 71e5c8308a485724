package io.memwire.flight;

import io.memwire.flight.memory.ArenaMemory;
import io.memwire.flight.wire.WireException;
import io.memwire.transfer.Connector;
import io.memwire.transfer.TransferException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client end of one RDMA exchange, as the consumer sees it. {@link #next()} takes the next
 * {@link StreamEvent}, waits for a batch's reads, wraps its registered body as an Arrow buffer of
 * the caller's allocator (no copy), rebuilds the batch from its IPC header and loads it.
 *
 * <p>Threads: the caller (one at a time, like FlightStream) runs {@link #settle}, {@link #next} and
 * {@link #close} and is the only consumer of the events; a thread of the client's executor runs the
 * {@link BatchPuller} (reads descriptors, starts reads, half-closes at END), the only producer of
 * events; transport threads (tcp I/O, verbs completion, in-memory I/O) end a batch's reads, check
 * its guard and queue its FREE; executor tasks send FREE groups ({@link FreeSender}).
 *
 * <p>The consumer's {@link State} moves OPEN → ENDED (END taken) or OPEN → FAILED (a failure taken;
 * thrown again by every later call), and from any of them to CLOSED; any other move is a bug and
 * throws {@link IllegalStateException}.
 */
final class RdmaSource implements StreamSource {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaSource.class);
  private static final StreamEvent END = new StreamEvent.End();

  /** Where the consumer is in the stream. */
  enum State {
    OPEN,
    ENDED,
    FAILED,
    CLOSED;

    /**
     * Checks a move: returns {@code to} when this state may move there.
     *
     * @throws IllegalStateException naming both states when it may not
     */
    State moveTo(State to) {
      boolean ok = this == OPEN ? to != OPEN : this != CLOSED && to == CLOSED;
      if (!ok) {
        throw new IllegalStateException("RDMA stream cannot move from " + this + " to " + to);
      }
      return to;
    }
  }

  private final FlightClient.ExchangeReaderWriter exchange;
  private final FlightStream reader;
  private final Duration readTimeout;
  private final LinkedBlockingQueue<StreamEvent> events = new LinkedBlockingQueue<>();
  private final FreeSender frees;
  private final Future<?> pumpTask;
  private volatile State state = State.OPEN;

  /** The failure a FAILED stream throws. */
  private FlightRuntimeException failure;

  /** An event {@link #settle} took and {@link #next} has not consumed yet. */
  private StreamEvent peeked;

  private final BatchLoader batchLoader;
  private long batches;

  RdmaSource(
      RdmaFlightClient client,
      Connector node,
      ArenaMemory memory,
      FlightClient.ExchangeReaderWriter exchange) {
    BufferAllocator allocator = client.allocator();
    this.exchange = exchange;
    this.reader = exchange.getReader();
    this.readTimeout = client.readTimeout();
    this.batchLoader = new BatchLoader(allocator, client.clientStats(), reader);
    this.frees = new FreeSender(exchange.getWriter(), allocator, client.executor());
    this.pumpTask =
        client.executor().submit(new BatchPuller(client, node, memory, reader, frees, events));
  }

  private void moveTo(State to) {
    State from = state;
    state = from.moveTo(to);
    LOG.debug("RDMA stream {} -> {}", from, to);
  }

  /** Takes a failure: the stream is FAILED and throws it from now on. */
  private FlightRuntimeException failWith(FlightRuntimeException f) {
    moveTo(State.FAILED);
    failure = f;
    return f;
  }

  private StreamEvent take() {
    if (peeked != null) {
      StreamEvent e = peeked;
      peeked = null;
      return e;
    }
    switch (state) {
      case ENDED:
        return END;
      case FAILED:
        throw failure;
      case CLOSED:
        throw new IllegalStateException("stream is closed");
      default:
        break;
    }
    try {
      while (true) {
        if (state == State.CLOSED) {
          throw new IllegalStateException("stream is closed");
        }
        StreamEvent e = events.poll(100, TimeUnit.MILLISECONDS);
        if (e != null) {
          return e;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw CallStatus.CANCELLED
          .withDescription("interrupted waiting for the next batch")
          .withCause(e)
          .toRuntimeException();
    }
  }

  @Override
  public void settle() {
    if (peeked != null || state == State.ENDED) {
      return;
    }
    StreamEvent e = take();
    if (e instanceof StreamEvent.Failed f) {
      throw failWith(toFlight(f.cause()));
    }
    if (e instanceof StreamEvent.Batch b) {
      try {
        await(b.pull());
      } catch (FlightRuntimeException ex) {
        discard(b.pull());
        throw failWith(whyLeaseEnded(ex));
      }
    }
    peeked = e;
  }

  @Override
  public boolean next() {
    StreamEvent e = take();
    if (e instanceof StreamEvent.End) {
      if (state == State.OPEN) {
        moveTo(State.ENDED);
      }
      return false;
    }
    if (e instanceof StreamEvent.Failed f) {
      throw failWith(toFlight(f.cause()));
    }
    batchLoader.root();
    if (e instanceof StreamEvent.Metadata m) {
      batchLoader.loadMetadata(m.bytes());
      return true;
    }
    Pull p = ((StreamEvent.Batch) e).pull();
    try {
      await(p);
      batchLoader.load(p);
    } catch (FlightRuntimeException ex) {
      discard(p);
      throw failWith(whyLeaseEnded(ex));
    }
    batches++;
    return true;
  }

  /**
   * A batch dropped by its guard check means the server ended the exchange (lease timeout, producer
   * error, cancellation): its own status is on its way and says more, so wait for it.
   */
  private FlightRuntimeException whyLeaseEnded(FlightRuntimeException e) {
    if (FallbackReason.of(e) != FallbackReason.LEASE_ENDED) {
      return e;
    }
    long deadline = System.nanoTime() + Math.min(readTimeout.toNanos(), 10_000_000_000L);
    try {
      while (System.nanoTime() < deadline) {
        StreamEvent it = events.poll(50, TimeUnit.MILLISECONDS);
        if (it instanceof StreamEvent.Failed f) {
          FlightRuntimeException server = toFlight(f.cause());
          server.addSuppressed(e);
          return server;
        }
        if (it instanceof StreamEvent.End) {
          return e;
        }
        discard(it); // later batches of an ended exchange are dropped too
      }
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
    }
    return e;
  }

  private void await(Pull p) {
    try {
      p.done.get(readTimeout.toMillis() + 5_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw toFlight(e.getCause());
    } catch (TimeoutException e) {
      throw FallbackReason.TIMEOUT.error(
          CallStatus.TIMED_OUT,
          "reads of batch " + p.seq + " did not end within " + readTimeout.toMillis() + " ms",
          null);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw CallStatus.CANCELLED.withDescription("interrupted").withCause(e).toRuntimeException();
    }
  }

  @Override
  public Schema schema() {
    return batchLoader.root().getSchema();
  }

  @Override
  public VectorSchemaRoot root() {
    return batchLoader.root();
  }

  @Override
  public DictionaryProvider dictionaries() {
    return reader.getDictionaryProvider();
  }

  @Override
  public ArrowBuf latestMetadata() {
    return batchLoader.latestMetadata();
  }

  long batchesHandedOut() {
    return batches;
  }

  @Override
  public void cancel(String message, Throwable cause) {
    reader.cancel(message, cause);
  }

  @Override
  public void close() {
    State before = state;
    if (before == State.CLOSED) {
      return;
    }
    moveTo(State.CLOSED);
    frees.stop();
    if (before != State.ENDED) {
      try {
        reader.cancel("memwire: stream closed before its end", null);
      } catch (RuntimeException e) {
        LOG.debug("cancel on close failed", e);
      }
    }
    try {
      pumpTask.get(10, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      pumpTask.cancel(true);
      LOG.warn("exchange reader did not stop within 10 s of close; interrupted it");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      LOG.debug("pump ended with", e.getCause());
    }
    List<StreamEvent> left = new ArrayList<>();
    if (peeked != null) {
      left.add(peeked);
      peeked = null;
    }
    events.drainTo(left);
    for (StreamEvent e : left) {
      discard(e);
    }
    batchLoader.close();
    try {
      exchange.close();
    } catch (Exception e) {
      LOG.debug("closing the exchange: {}", e.toString());
    }
  }

  /** Frees a batch's block once its reads have ended (never while bytes may still land in it). */
  private void discard(StreamEvent e) {
    if (e instanceof StreamEvent.Batch b) {
      discard(b.pull());
    }
  }

  private void discard(Pull p) {
    try {
      p.done.get(readTimeout.toMillis() + 5_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      // failed reads already freed the block
    } catch (TimeoutException e) {
      LOG.warn(
          "reads of batch {} did not end in time; leaving its {} bytes unfreed",
          p.seq,
          p.bodyLength);
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    p.freeBlock();
  }

  /** A failure of the data plane's own code as a Flight error, with its fallback reason. */
  static FlightRuntimeException toFlight(Throwable t) {
    if (t instanceof FlightRuntimeException f) {
      return f;
    }
    if (t instanceof TransferException) {
      return FallbackReason.TRANSPORT.error(
          CallStatus.UNAVAILABLE, "data-plane read failed: " + t.getMessage(), t);
    }
    if (t instanceof WireException) {
      return FallbackReason.PROTOCOL.error(CallStatus.INTERNAL, t.getMessage(), t);
    }
    return FallbackReason.CLIENT_ERROR.error(CallStatus.INTERNAL, t.toString(), t);
  }
}
