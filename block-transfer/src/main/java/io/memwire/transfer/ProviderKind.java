package io.memwire.transfer;

import java.util.Locale;

/** Which transport carries one-sided reads. */
public enum ProviderKind {
  /**
   * Verbs when its probe succeeds, else ucx when UCX offers an RDMA transport, else tcp (and one
   * log line saying why).
   */
  AUTO,
  /** RDMA verbs through DiSNI: InfiniBand, RoCE or iWARP. A start-up error when unavailable. */
  VERBS,
  /** One-sided semantics emulated over TCP by a responder on the serving node. */
  TCP,
  /** One-sided GETs through UCX (JUCX): its RDMA transports, or tcp/shared memory when asked. */
  UCX;

  /** Parses {@code auto|verbs|ucx|tcp} (any case), naming {@code key} in the error. */
  public static ProviderKind parse(String key, String value) {
    if (value == null) {
      throw new TransferConfigException(
          TransferConfigException.Problem.MISSING,
          key,
          key + " is not set; expected one of auto, verbs, ucx, tcp");
    }
    try {
      return valueOf(value.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new TransferConfigException(
          TransferConfigException.Problem.MALFORMED,
          key,
          key + "=" + value + " is not a provider; expected one of auto, verbs, ucx, tcp");
    }
  }

  /** The wire code used in {@link RegionDescriptor}: 1 tcp, 2 verbs, 3 ucx. */
  public byte wireCode() {
    switch (this) {
      case TCP:
        return 1;
      case VERBS:
        return 2;
      case UCX:
        return 3;
      default:
        throw new IllegalStateException("auto has no wire code");
    }
  }

  static ProviderKind fromWireCode(byte code) {
    switch (code) {
      case 1:
        return TCP;
      case 2:
        return VERBS;
      case 3:
        return UCX;
      default:
        throw new IllegalArgumentException("unknown provider code " + code);
    }
  }

  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }
}
