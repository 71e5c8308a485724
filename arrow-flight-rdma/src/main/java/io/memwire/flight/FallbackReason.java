package io.memwire.flight;

import io.memwire.flight.wire.WireException;
import io.memwire.transfer.TransferException;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.ErrorFlightMetadata;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;

/**
 * Why the RDMA data plane did not carry a stream. Every reason names a failure of the data plane,
 * not of the data: a client in data plane {@code auto} may read the same ticket over DoGet instead
 * (before it handed out the first batch). A failure without a reason ({@link #of} returns null),
 * such as the producer's own error, would fail over DoGet too and is passed on.
 *
 * <p>The server's reasons travel in the gRPC status's metadata (key {@value #METADATA_KEY}), the
 * client's in the {@link FlightRuntimeException}'s status the same way, so the decision never
 * depends on a message's text.
 */
public enum FallbackReason {
  /** The endpoint offers no {@code rdma://} or {@code rdma+tcp://} location for the data plane. */
  NO_LOCATION,
  /** The client's transport cannot start, connect or read (a {@link TransferException}). */
  TRANSPORT,
  /**
   * The server does not serve the data plane for this call: no RDMA wrapper (DoExchange
   * UNIMPLEMENTED), data plane off or closed, another provider, or a request it cannot parse.
   */
  NOT_SERVED,
  /** The server runs its most RDMA exchanges at once ({@code maxExchanges}). */
  AT_CAPACITY,
  /**
   * The server could not lease a batch body: no registered memory within the lease timeout, or
   * registering it failed (its transfer node closed, say).
   */
  LEASE_FAILED,
  /** The client could not take or account landing memory for a body. */
  CLIENT_MEMORY,
  /** A data-plane message broke the protocol (a {@link WireException}). */
  PROTOCOL,
  /** The server ended a batch's lease before the client had verified its reads. */
  LEASE_ENDED,
  /** A batch's reads did not end within the client's read timeout. */
  TIMEOUT,
  /** Any other failure in the client's data-plane code. */
  CLIENT_ERROR;

  /** The status metadata key carrying a reason's name. */
  static final String METADATA_KEY = "memwire-fallback";

  /**
   * A Flight error with this reason attached: {@code status} with {@code description} (prefixed
   * "memwire: " for people reading it) and {@code cause}.
   */
  FlightRuntimeException error(CallStatus status, String description, Throwable cause) {
    ErrorFlightMetadata md = new ErrorFlightMetadata();
    md.insert(METADATA_KEY, name());
    CallStatus s = status.withDescription("memwire: " + description).withMetadata(md);
    return (cause == null ? s : s.withCause(cause)).toRuntimeException();
  }

  /**
   * The data-plane reason behind {@code t} (searching its causes), or null when {@code t} is not a
   * data-plane failure.
   */
  static FallbackReason of(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof FlightRuntimeException) {
        FlightRuntimeException f = (FlightRuntimeException) c;
        ErrorFlightMetadata md = f.status().metadata();
        String name = md == null || !md.containsKey(METADATA_KEY) ? null : md.get(METADATA_KEY);
        if (name != null) {
          for (FallbackReason r : values()) {
            if (r.name().equals(name)) {
              return r;
            }
          }
        }
        if (f.status().code() == FlightStatusCode.UNIMPLEMENTED) {
          return NOT_SERVED; // a server without the wrapper: DoExchange is not implemented
        }
      } else if (c instanceof TransferException) {
        return TRANSPORT;
      } else if (c instanceof WireException) {
        return PROTOCOL;
      }
    }
    return null;
  }
}
