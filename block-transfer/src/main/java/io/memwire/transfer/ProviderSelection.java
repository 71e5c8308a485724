package io.memwire.transfer;

import io.memwire.transfer.spi.TransportProvider;
import io.memwire.transfer.tcp.TcpProvider;
import io.memwire.transfer.verbs.VerbsProbe;
import io.memwire.transfer.verbs.VerbsProvider;
import java.util.Optional;

/**
 * Decides between verbs and tcp. {@code auto} runs the verbs probe (libdisni loadable, an RDMA
 * device owning the bind address, memlock limit) and falls back to tcp with the probe's reason;
 * {@code verbs} turns a failed probe into a start-up error.
 */
public final class ProviderSelection {

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
          Optional<String> why = VerbsProbe.unavailableReason(config);
          if (why.isPresent()) {
            throw new TransferConfigException(
                "provider=verbs was requested but verbs cannot be used: "
                    + why.get()
                    + ". Use provider=auto to fall back to tcp, or provider=tcp.");
          }
          return new Decision(ProviderKind.VERBS, "verbs requested by configuration");
        }
      default:
        {
          Optional<String> why = VerbsProbe.unavailableReason(config);
          return why.map(w -> new Decision(ProviderKind.TCP, "auto: verbs not used because " + w))
              .orElseGet(() -> new Decision(ProviderKind.VERBS, "auto: verbs probe passed"));
        }
    }
  }

  static Result open(TransferConfig config) {
    Decision d = decide(config);
    if (d.kind() == ProviderKind.VERBS) {
      return new Result(VerbsProvider.open(config), d.reason());
    }
    return new Result(TcpProvider.open(config), d.reason());
  }
}
