package io.memwire.flight;

import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.Ticket;

/**
 * What an {@link RdmaFlightClient} stream reads: a ticket, the endpoint it came from when known,
 * and the call options of its gRPC calls.
 */
final class StreamTarget {
  final Ticket ticket;
  final FlightEndpoint endpoint;
  final CallOption[] options;

  StreamTarget(Ticket ticket, FlightEndpoint endpoint, CallOption[] options) {
    this.ticket = ticket;
    this.endpoint = endpoint;
    this.options = options;
  }

  @Override
  public String toString() {
    return "ticket of "
        + ticket.getBytes().length
        + " bytes"
        + (endpoint == null ? "" : " at " + endpoint.getLocations());
  }
}
