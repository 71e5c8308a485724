package io.memwire.flight;

import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stream of record batches with the shape of Flight's {@code FlightStream}: {@link #getSchema},
 * {@link #next}, {@link #getRoot}, {@link #getDictionaryProvider}, {@link #getLatestMetadata},
 * {@link #cancel} and {@link #close}. Behind it is either the RDMA data plane or plain DoGet
 * ({@link #dataPlane()} says which).
 *
 * <p>With data plane {@code auto}, a data-plane failure before the first {@link #next()} returned
 * (the transport cannot connect, the server does not speak the protocol, the first read fails)
 * silently re-opens the ticket over DoGet; once a batch was handed out, a failure is a {@link
 * FlightRuntimeException}. Not thread-safe, like FlightStream.
 */
public final class RdmaFlightStream implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaFlightStream.class);

  private final RdmaFlightClient client;
  private final StreamTarget target;
  private final boolean mayFallBack;
  private StreamSource source;
  private DataPlane dataPlane;
  private FallbackReason fallback;
  private String fallbackReason;
  private boolean handedOut;
  private boolean closed;

  RdmaFlightStream(
      RdmaFlightClient client,
      StreamTarget target,
      StreamSource source,
      DataPlane dataPlane,
      boolean mayFallBack,
      FallbackReason fallback,
      String fallbackReason) {
    this.client = client;
    this.target = target;
    this.source = source;
    this.dataPlane = dataPlane;
    this.mayFallBack = mayFallBack;
    this.fallback = fallback;
    this.fallbackReason = fallbackReason;
  }

  /** The path carrying this stream's bodies now: TCP or VERBS (RDMA), or GRPC. */
  public DataPlane dataPlane() {
    return dataPlane;
  }

  /** Why this stream uses gRPC although RDMA was allowed, or null. */
  public FallbackReason fallback() {
    return fallback;
  }

  /** {@link #fallback()} for people: what failed, in words; or null. */
  public String fallbackReason() {
    return fallbackReason;
  }

  /** The schema; blocks until the stream is known to work. */
  public Schema getSchema() {
    settle();
    return source.schema();
  }

  /** The root each {@link #next()} loads into; blocks until the stream is known to work. */
  public VectorSchemaRoot getRoot() {
    settle();
    return source.root();
  }

  /** Dictionaries of dictionary-encoded columns (complete once the first batch arrived). */
  public DictionaryProvider getDictionaryProvider() {
    settle();
    return source.dictionaries();
  }

  /** App metadata that came with the latest batch or metadata message, or null. */
  public ArrowBuf getLatestMetadata() {
    return source.latestMetadata();
  }

  /**
   * Loads the next batch (or metadata-only message) into {@link #getRoot()}.
   *
   * @return false at the end of the stream
   * @throws FlightRuntimeException with the server's status and message, or UNAVAILABLE when the
   *     data plane fails after batches were handed out
   */
  public boolean next() {
    settle();
    try {
      boolean more = source.next();
      handedOut |= more;
      return more;
    } catch (FlightRuntimeException e) {
      if (canFallBack(e)) {
        fallBack(e);
        return next();
      }
      throw e;
    }
  }

  private void settle() {
    if (closed) {
      throw new IllegalStateException("stream is closed");
    }
    if (handedOut) {
      return;
    }
    try {
      source.settle();
    } catch (FlightRuntimeException e) {
      if (canFallBack(e)) {
        fallBack(e);
        return;
      }
      throw e;
    }
  }

  private boolean canFallBack(FlightRuntimeException e) {
    return mayFallBack
        && !handedOut
        && source instanceof RdmaSource
        && FallbackReason.of(e) != null;
  }

  private void fallBack(FlightRuntimeException e) {
    FallbackReason reason = FallbackReason.of(e);
    String why =
        "RDMA data plane failed before the first batch (" + reason + "): " + e.getMessage();
    LOG.info("Flight data plane for {}: grpc DoGet ({})", target, why);
    source.close();
    client.clientStats().fellBack(reason);
    client.clientStats().streamsGrpc.increment();
    source = client.openGrpc(target);
    dataPlane = DataPlane.GRPC;
    fallback = reason;
    fallbackReason = why;
  }

  /** Asks the server to stop sending; drain with {@link #next()} or {@link #close()}. */
  public void cancel(String message, Throwable cause) {
    source.cancel(message, cause);
  }

  /** Releases everything the stream holds; cancels it first when it did not reach its end. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    source.close();
  }
}
