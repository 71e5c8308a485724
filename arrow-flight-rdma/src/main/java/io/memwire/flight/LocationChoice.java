package io.memwire.flight;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.Location;

/**
 * Which endpoint location and transfer provider an {@link RdmaFlightClient} stream uses under a
 * {@link DataPlane} setting other than grpc.
 */
final class LocationChoice {
  private LocationChoice() {}

  /** The first location of the endpoint the data plane may use; null when there is none. */
  static Location pick(DataPlane dataPlane, FlightEndpoint e) {
    for (Location l : e.getLocations()) {
      ProviderKind p = RdmaLocations.providerOf(l);
      if (p == null) {
        continue;
      }
      if (dataPlane == DataPlane.AUTO
          || (dataPlane == DataPlane.TCP && p == ProviderKind.TCP)
          || (dataPlane == DataPlane.VERBS && p == ProviderKind.VERBS)
          || (dataPlane == DataPlane.UCX && p == ProviderKind.UCX)) {
        return l;
      }
    }
    return null;
  }

  /** Why {@link #pick} found nothing, for logs and errors. */
  static String noLocation(DataPlane dataPlane) {
    return dataPlane == DataPlane.AUTO
        ? "the endpoint offers no rdma://, rdma+tcp:// or rdma+ucx:// location"
        : "the endpoint offers no "
            + (dataPlane == DataPlane.TCP
                ? "rdma+tcp://"
                : dataPlane == DataPlane.UCX ? "rdma+ucx://" : "rdma://")
            + " location";
  }

  /** The provider to try for a bare ticket, which names no location. */
  static ProviderKind withoutLocation(DataPlane dataPlane, TransferConfig config) {
    return dataPlane == DataPlane.TCP
        ? ProviderKind.TCP
        : dataPlane == DataPlane.VERBS
            ? ProviderKind.VERBS
            : dataPlane == DataPlane.UCX ? ProviderKind.UCX : config.provider();
  }
}
