package io.memwire.flight;

import io.memwire.transfer.ProviderKind;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.Location;

/**
 * The Flight locations of the data plane: {@code rdma://host:port} for verbs and {@code
 * rdma+tcp://host:port} for the tcp provider, where host:port is the server's transfer node.
 */
public final class RdmaLocations {
  /** Scheme of a verbs data plane. */
  public static final String VERBS_SCHEME = "rdma";

  /** Scheme of a tcp-provider data plane. */
  public static final String TCP_SCHEME = "rdma+tcp";

  /** Scheme of a ucx-provider data plane. */
  public static final String UCX_SCHEME = "rdma+ucx";

  private RdmaLocations() {}

  /** The location of a transfer node listening on {@code address} with {@code provider}. */
  public static Location of(ProviderKind provider, InetSocketAddress address) {
    String scheme;
    switch (provider) {
      case TCP:
        scheme = TCP_SCHEME;
        break;
      case VERBS:
        scheme = VERBS_SCHEME;
        break;
      case UCX:
        scheme = UCX_SCHEME;
        break;
      default:
        throw new IllegalArgumentException("a location names tcp, verbs or ucx, not " + provider);
    }
    InetAddress a = address.getAddress();
    String host = a instanceof Inet6Address ? "[" + a.getHostAddress() + "]" : a.getHostAddress();
    try {
      return new Location(new URI(scheme, null, host, address.getPort(), null, null, null));
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("cannot build a location for " + address, e);
    }
  }

  /** The provider a location's scheme names, or null when it is not a data-plane location. */
  public static ProviderKind providerOf(Location location) {
    String scheme = location.getUri().getScheme();
    if (scheme == null) {
      return null;
    }
    switch (scheme.toLowerCase(Locale.ROOT)) {
      case TCP_SCHEME:
        return ProviderKind.TCP;
      case VERBS_SCHEME:
        return ProviderKind.VERBS;
      case UCX_SCHEME:
        return ProviderKind.UCX;
      default:
        return null;
    }
  }

  /** The transfer node address of a data-plane location. */
  public static InetSocketAddress addressOf(Location location) {
    URI u = location.getUri();
    if (u.getHost() == null || u.getPort() < 0) {
      throw new IllegalArgumentException("data-plane location needs host and port: " + location);
    }
    return new InetSocketAddress(u.getHost(), u.getPort());
  }

  /** The first data-plane location of an endpoint, or null. */
  public static Location firstOf(FlightEndpoint endpoint) {
    for (Location l : endpoint.getLocations()) {
      if (providerOf(l) != null) {
        return l;
      }
    }
    return null;
  }
}
