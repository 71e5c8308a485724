package io.memwire.flight;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.Location;
import org.apache.arrow.vector.ipc.message.IpcOption;

/**
 * Adds the data-plane location to every endpoint of a {@link FlightInfo}, after the endpoint's own
 * locations: stock clients that take the first location keep using gRPC, an {@link
 * RdmaFlightClient} finds the RDMA one.
 */
final class FlightInfoDecorator {
  private final Location rdmaLocation;
  private final Location grpcLocation;

  /**
   * @param rdmaLocation the producer's data-plane location
   * @param grpcLocation the server's own gRPC location, or null (then endpoints without a location
   *     get "reuse this connection")
   */
  FlightInfoDecorator(Location rdmaLocation, Location grpcLocation) {
    this.rdmaLocation = rdmaLocation;
    this.grpcLocation = grpcLocation;
  }

  /** The same info with the data-plane location after each endpoint's own locations. */
  FlightInfo decorate(FlightInfo info) {
    if (info == null) {
      return null;
    }
    List<FlightEndpoint> endpoints = new ArrayList<>(info.getEndpoints().size());
    for (FlightEndpoint e : info.getEndpoints()) {
      List<Location> locs = new ArrayList<>(e.getLocations());
      if (locs.contains(rdmaLocation)) {
        endpoints.add(e);
        continue;
      }
      if (locs.isEmpty()) {
        // "Same service" was implicit: make it explicit so the data plane is not taken as first.
        locs.add(grpcLocation != null ? grpcLocation : Location.reuseConnection());
      }
      locs.add(rdmaLocation);
      FlightEndpoint.Builder eb =
          FlightEndpoint.builder(e.getTicket(), locs.toArray(new Location[0]));
      e.getExpirationTime().ifPresent(eb::setExpirationTime);
      if (e.getAppMetadata() != null) {
        eb.setAppMetadata(e.getAppMetadata());
      }
      endpoints.add(eb.build());
    }
    return new FlightInfo(
        info.getSchemaOptional().orElse(null),
        info.getDescriptor(),
        endpoints,
        info.getBytes(),
        info.getRecords(),
        info.getOrdered(),
        IpcOption.DEFAULT,
        info.getAppMetadata());
  }
}
