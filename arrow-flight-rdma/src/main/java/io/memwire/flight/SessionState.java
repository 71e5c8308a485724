package io.memwire.flight;

import java.util.EnumSet;
import java.util.Set;

/**
 * Where an RDMA exchange is on the server ({@link ServerSession}). It only moves forward:
 *
 * <pre>
 *   STREAMING --producer completed or failed--> DRAINING
 *   STREAMING, DRAINING --exchange ended (completed, error, lease timeout)--> ENDED
 *   STREAMING, DRAINING --client cancelled or went away, producer closed--> CANCELLED
 * </pre>
 *
 * ENDED and CANCELLED are terminal: every lease is released and nothing more is sent.
 */
enum SessionState {
  /** The producer is sending batches. */
  STREAMING,
  /**
   * The producer completed or failed; batches already described stay leased until the client has
   * read them (or half-closed), then the exchange ends with the producer's outcome.
   */
  DRAINING,
  /** The exchange ended towards the client (completed or with an error). */
  ENDED,
  /** The client cancelled the exchange or went away, or the producer was closed. */
  CANCELLED;

  boolean isTerminal() {
    return this == ENDED || this == CANCELLED;
  }

  /**
   * Checks a move: returns {@code to} when this state may move there.
   *
   * @throws IllegalStateException naming both states when it may not
   */
  SessionState moveTo(SessionState to) {
    if (!next().contains(to)) {
      throw new IllegalStateException("RDMA exchange cannot move from " + this + " to " + to);
    }
    return to;
  }

  /** The states this one may move to. */
  Set<SessionState> next() {
    switch (this) {
      case STREAMING:
        return EnumSet.of(DRAINING, ENDED, CANCELLED);
      case DRAINING:
        return EnumSet.of(ENDED, CANCELLED);
      default:
        return EnumSet.noneOf(SessionState.class);
    }
  }
}
