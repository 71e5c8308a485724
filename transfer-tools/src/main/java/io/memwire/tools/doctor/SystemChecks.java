package io.memwire.tools.doctor;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.verbs.RdmaInventory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Supplier;

/**
 * The checks of one node that need no peer, in the order the doctor prints them: RDMA devices and
 * ports with the bind address's device and RoCE v2 GID ({@link DeviceChecks}), libdisni ({@link
 * LibraryCheck}), the host firewall ({@link FirewallChecks}), the memlock limit against the
 * registration budget ({@link MemlockCheck}), and the provider {@code auto} would pick ({@link
 * ProviderCheck}), with rdma_cm's RoCE defaults and the NIC counters ({@link FabricChecks}). Sysfs
 * root, limits file and library check are inputs.
 */
final class SystemChecks {
  private final TransferConfig config;
  private final RdmaInventory inventory;
  private final Path limitsFile;
  private final Supplier<Optional<String>> libraryError;
  private final Supplier<OptionalInt> libraryVersion;
  private final boolean realSystem;
  private final Supplier<Optional<Path>> libraryFile;
  private final Supplier<List<Firewall.Ruleset>> firewall;
  private UcxChecks ucx;

  SystemChecks(
      TransferConfig config,
      RdmaInventory inventory,
      Path limitsFile,
      Supplier<Optional<String>> libraryError,
      Supplier<OptionalInt> libraryVersion,
      boolean realSystem) {
    this(
        config,
        inventory,
        limitsFile,
        libraryError,
        libraryVersion,
        realSystem,
        Optional::empty,
        () -> List.of(Firewall.Ruleset.of("none", "")));
  }

  /**
   * @param libraryFile the libdisni file (the loaded one, else the one on java.library.path); asked
   *     after {@code libraryError}
   * @param firewall the host's firewall rules, or why they cannot be read
   */
  SystemChecks(
      TransferConfig config,
      RdmaInventory inventory,
      Path limitsFile,
      Supplier<Optional<String>> libraryError,
      Supplier<OptionalInt> libraryVersion,
      boolean realSystem,
      Supplier<Optional<Path>> libraryFile,
      Supplier<List<Firewall.Ruleset>> firewall) {
    this.libraryFile = libraryFile;
    this.firewall = firewall;
    this.config = config;
    this.inventory = inventory;
    this.limitsFile = limitsFile;
    this.libraryError = libraryError;
    this.libraryVersion = libraryVersion;
    this.realSystem = realSystem;
    this.ucx = realSystem ? UcxChecks.system(config) : UcxChecks.absent(config);
  }

  /** Replaces the ucx checks (tests: a given class path, environment and library). */
  SystemChecks withUcx(UcxChecks checks) {
    this.ucx = checks;
    return this;
  }

  /**
   * Why the ucx factory would refuse {@code provider=auto}, from the ucx checks (for the provider
   * decision on a fake tree; on the real system {@code ProviderSelection} asks the factory).
   */
  private static Optional<String> ucxReason(List<Check> ucxChecks) {
    for (Check c : ucxChecks) {
      if (c.status() != Check.Status.OK || (c.name().equals("ucx-jars") && ucxChecks.size() == 1)) {
        return Optional.of(c.finding());
      }
    }
    return Optional.empty();
  }

  List<Check> run() {
    VerbsImpact impact = new VerbsImpact(config.provider());
    List<Check> out = new ArrayList<>();
    out.addAll(new DeviceChecks(config, inventory, impact).run());
    out.add(FabricChecks.counters(new io.memwire.transfer.fabric.SysfsRoot(inventory.sysfs())));
    out.add(new LibraryCheck(libraryError, libraryVersion, libraryFile, impact).run());
    List<Check> ucxChecks = ucx.run();
    out.addAll(ucxChecks);
    out.addAll(new FirewallChecks(config, firewall).run());
    out.add(new MemlockCheck(config, limitsFile, impact).run());
    out.add(
        new ProviderCheck(config, inventory, limitsFile, libraryError, realSystem)
            .withUcx(ucxReason(ucxChecks))
            .run());
    return out;
  }
}
