package io.memwire.tools.doctor;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ProviderSelection;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.verbs.RdmaInventory;
import io.memwire.transfer.verbs.VerbsProbe;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * {@code provider}: the provider the node would pick. On the real system that is {@link
 * ProviderSelection}'s own decision; on a given sysfs tree and limits file (tests) the same rule
 * applied to them.
 */
final class ProviderCheck {
  private final TransferConfig config;
  private final RdmaInventory inventory;
  private final Path limitsFile;
  private final Supplier<Optional<String>> libraryError;
  private final boolean realSystem;
  private Optional<String> ucxUnavailable =
      Optional.of("the ucx provider is not on the class path");

  ProviderCheck(
      TransferConfig config,
      RdmaInventory inventory,
      Path limitsFile,
      Supplier<Optional<String>> libraryError,
      boolean realSystem) {
    this.config = config;
    this.inventory = inventory;
    this.limitsFile = limitsFile;
    this.libraryError = libraryError;
    this.realSystem = realSystem;
  }

  /** Why ucx cannot be used (on a fake tree; the real system asks the ucx factory). */
  ProviderCheck withUcx(Optional<String> why) {
    this.ucxUnavailable = why;
    return this;
  }

  Check run() {
    ProviderKind kind;
    String reason;
    if (realSystem) {
      try {
        ProviderSelection.Decision d = ProviderSelection.decide(config);
        kind = d.kind();
        reason = d.reason();
      } catch (TransferConfigException e) {
        return Check.fail(
            "provider", e.getMessage(), "fix the FAIL lines above or use " + "provider=auto");
      }
    } else {
      // Same rule as ProviderSelection.decide, on the given sysfs tree and limits file.
      Optional<String> why =
          config.provider() == ProviderKind.TCP || config.provider() == ProviderKind.UCX
              ? Optional.empty()
              : VerbsProbe.unavailableReason(config, inventory, limitsFile, libraryError);
      if (config.provider() == ProviderKind.TCP) {
        kind = ProviderKind.TCP;
        reason = "tcp requested by configuration";
      } else if (config.provider() == ProviderKind.UCX) {
        if (ucxUnavailable.isPresent()) {
          return Check.fail(
              "provider",
              "provider=ucx was requested but ucx cannot be used: " + ucxUnavailable.get(),
              "fix the FAIL lines above or use provider=auto");
        }
        kind = ProviderKind.UCX;
        reason = "ucx requested by configuration";
      } else if (why.isPresent()) {
        if (config.provider() == ProviderKind.VERBS) {
          return Check.fail(
              "provider",
              "provider=verbs was requested but verbs cannot be used: " + why.get(),
              "fix the FAIL lines above or use provider=auto");
        }
        if (ucxUnavailable.isEmpty()) {
          kind = ProviderKind.UCX;
          reason = "auto: verbs not used because " + why.get() + "; UCX offers an RDMA transport";
        } else {
          kind = ProviderKind.TCP;
          reason =
              "auto: verbs not used because "
                  + why.get()
                  + "; ucx not used because "
                  + ucxUnavailable.get();
        }
      } else {
        kind = ProviderKind.VERBS;
        reason =
            config.provider() == ProviderKind.AUTO
                ? "auto: verbs probe passed"
                : "verbs requested by configuration";
      }
    }
    String finding = "provider=" + config.provider() + " will use " + kind + " (" + reason + ")";
    if (config.provider() == ProviderKind.AUTO && kind == ProviderKind.TCP) {
      return Check.warn(
          "provider",
          finding,
          "fine without RDMA hardware; to get verbs, fix the " + "WARN lines above");
    }
    return Check.ok("provider", finding);
  }
}
