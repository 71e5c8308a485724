package io.memwire.transfer;

import io.memwire.transfer.spi.ProviderFactory;
import io.memwire.transfer.spi.TransportProvider;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * Decides between verbs, ucx and tcp. {@code auto} runs the verbs probe (libdisni loadable, an RDMA
 * device owning the bind address, memlock limit), then the ucx one (its module on the class path,
 * UCX installed, an RDMA device; asked with {@code provider=auto} in the config, the ucx factory
 * refuses UCX's tcp and shared-memory transports) and falls back to tcp with both reasons; {@code
 * verbs} or {@code ucx} turns a failed probe into a start-up error. The providers are found as
 * {@link ProviderFactory} services, so this package does not depend on theirs.
 */
public final class ProviderSelection {
  /** The factories on this class loader's path, by kind; loaded once. */
  private static final Map<ProviderKind, ProviderFactory> FACTORIES = loadFactories();

  private static Map<ProviderKind, ProviderFactory> loadFactories() {
    Map<ProviderKind, ProviderFactory> m = new EnumMap<>(ProviderKind.class);
    // This class's own loader: under Spark or YARN the jar may sit in a child class loader.
    for (ProviderFactory f :
        ServiceLoader.load(ProviderFactory.class, ProviderSelection.class.getClassLoader())) {
      m.putIfAbsent(f.kind(), f);
    }
    return m;
  }

  private static ProviderFactory factory(ProviderKind kind) {
    ProviderFactory f = FACTORIES.get(kind);
    if (f == null) {
      throw new IllegalStateException(
          "no "
              + kind
              + " provider on the class path (META-INF/services/"
              + ProviderFactory.class.getName()
              + " of the block-transfer jar is missing: a repackaged jar must keep it)");
    }
    return f;
  }

  private static Optional<String> verbsUnavailable(TransferConfig config) {
    ProviderFactory verbs = FACTORIES.get(ProviderKind.VERBS);
    return verbs == null
        ? Optional.of("the verbs provider is not on the class path")
        : verbs.unavailableReason(config);
  }

  private static Optional<String> ucxUnavailable(TransferConfig config) {
    ProviderFactory ucx = FACTORIES.get(ProviderKind.UCX);
    return ucx == null
        ? Optional.of("the ucx provider (memwire-block-transfer-ucx) is not on the class path")
        : ucx.unavailableReason(config);
  }

  /** The decision and the sentence explaining it. */
  public static final class Decision {
    private final ProviderKind kind;
    private final String reason;

    Decision(ProviderKind kind, String reason) {
      this.kind = kind;
      this.reason = reason;
    }

    public ProviderKind kind() {
      return kind;
    }

    public String reason() {
      return reason;
    }

    @Override
    public String toString() {
      return kind + ": " + reason;
    }
  }

  static final class Result {
    private final TransportProvider provider;
    private final String reason;

    Result(TransportProvider provider, String reason) {
      this.provider = provider;
      this.reason = reason;
    }

    TransportProvider provider() {
      return provider;
    }

    String reason() {
      return reason;
    }
  }

  private ProviderSelection() {}

  /**
   * What {@link TransferNode#start} would pick for {@code config}, without starting anything.
   *
   * @throws TransferConfigException when {@code verbs} is requested and cannot be used
   */
  public static Decision decide(TransferConfig config) {
    switch (config.provider()) {
      case TCP:
        return new Decision(ProviderKind.TCP, "tcp requested by configuration");
      case VERBS:
        {
          Optional<String> why = verbsUnavailable(config);
          if (why.isPresent()) {
            throw new TransferConfigException(
                "provider=verbs was requested but verbs cannot be used: "
                    + why.get()
                    + ". Use provider=auto to fall back to tcp, or provider=tcp.");
          }
          return new Decision(ProviderKind.VERBS, "verbs requested by configuration");
        }
      case UCX:
        {
          Optional<String> why = ucxUnavailable(config);
          if (why.isPresent()) {
            throw new TransferConfigException(
                "provider=ucx was requested but ucx cannot be used: "
                    + why.get()
                    + ". Use provider=auto to fall back to tcp, or provider=tcp.");
          }
          return new Decision(ProviderKind.UCX, "ucx requested by configuration");
        }
      default:
        {
          Optional<String> noVerbs = verbsUnavailable(config);
          if (noVerbs.isEmpty()) {
            return new Decision(ProviderKind.VERBS, "auto: verbs probe passed");
          }
          // Probed with provider=auto, the ucx factory accepts RDMA transports only.
          Optional<String> noUcx = ucxUnavailable(config);
          return noUcx
              .map(
                  u ->
                      new Decision(
                          ProviderKind.TCP,
                          "auto: verbs not used because "
                              + noVerbs.get()
                              + "; ucx not used because "
                              + u))
              .orElseGet(
                  () ->
                      new Decision(
                          ProviderKind.UCX,
                          "auto: verbs not used because "
                              + noVerbs.get()
                              + "; UCX offers an RDMA transport"));
        }
    }
  }

  static Result open(TransferConfig config) {
    Decision d = decide(config);
    return new Result(factory(d.kind()).open(config), d.reason());
  }
}
