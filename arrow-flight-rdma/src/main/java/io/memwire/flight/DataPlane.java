package io.memwire.flight;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfigException;
import java.util.Locale;

/** Which path an {@link RdmaFlightClient} uses for record-batch bodies. */
public enum DataPlane {
  /** The endpoint's RDMA location when it has one and the transport connects; else gRPC DoGet. */
  AUTO,
  /** One-sided reads over verbs ({@code rdma://} locations); an error when unavailable. */
  VERBS,
  /**
   * One-sided reads over the tcp provider ({@code rdma+tcp://} locations); an error when
   * unavailable.
   */
  TCP,
  /**
   * One-sided reads over the ucx provider ({@code rdma+ucx://} locations); an error when
   * unavailable.
   */
  UCX,
  /** Plain gRPC DoGet, as a stock FlightClient does. */
  GRPC;

  /** System property that sets the default data plane of new clients. */
  public static final String PROPERTY = "memwire.flight.dataPlane";

  /**
   * Parses {@code auto|verbs|tcp|ucx|grpc} (any case, blanks around ignored): {@code grpc}, or a
   * provider as {@link ProviderKind#parse} reads it.
   *
   * @throws TransferConfigException naming {@code key} and the value when it is none of them
   */
  public static DataPlane parse(String key, String value) {
    if (value == null || value.isBlank()) {
      throw new TransferConfigException(
          TransferConfigException.Problem.MISSING,
          key,
          key + " is empty; expected one of " + CHOICES);
    }
    if (value.trim().equalsIgnoreCase(GRPC.name())) {
      return GRPC;
    }
    ProviderKind provider;
    try {
      provider = ProviderKind.parse(key, value);
    } catch (TransferConfigException e) {
      throw notADataPlane(key, value); // the provider's message would not offer grpc
    }
    switch (provider) {
      case AUTO:
        return AUTO;
      case VERBS:
        return VERBS;
      case TCP:
        return TCP;
      case UCX:
        return UCX;
      default: // a provider Flight has no data plane for
        throw notADataPlane(key, value);
    }
  }

  private static final String CHOICES = "auto, verbs, tcp, ucx, grpc";

  private static TransferConfigException notADataPlane(String key, String value) {
    return new TransferConfigException(
        TransferConfigException.Problem.MALFORMED,
        key,
        key + "=" + value + " is not a data plane; expected one of " + CHOICES);
  }

  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }
}
