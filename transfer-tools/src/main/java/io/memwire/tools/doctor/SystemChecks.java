package io.memwire.tools.doctor;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ProviderSelection;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.verbs.MemlockLimit;
import io.memwire.transfer.verbs.RdmaInventory;
import io.memwire.transfer.verbs.VerbsProbe;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Supplier;

/**
 * The checks of one node that need no peer: RDMA devices and ports (sysfs), the bind address's
 * device and RoCE v2 GID, libdisni, the memlock limit against the registration budget, and the
 * provider {@code auto} would pick. Sysfs root, limits file and library check are inputs.
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
  }

  /**
   * A problem that makes the verbs probe fail: FAIL with {@code provider=verbs} (the node refuses
   * to start), WARN with {@code auto} (it runs on tcp), OK with {@code tcp} (not used). The finding
   * says which of these happens.
   */
  private Check problem(String name, String finding, String advice) {
    switch (config.provider()) {
      case TCP:
        return Check.ok(name, finding + " (not needed: provider=tcp)");
      case VERBS:
        return Check.fail(
            name, finding + "; a node with provider=verbs will refuse to start", advice);
      default:
        return Check.warn(name, finding + "; provider=auto will fall back to tcp", advice);
    }
  }

  /** Verbs still runs, but not as well or not everywhere: WARN, or OK with provider=tcp. */
  private Check advisory(String name, String finding, String advice) {
    if (config.provider() == ProviderKind.TCP) {
      return Check.ok(name, finding + " (not used: provider=tcp)");
    }
    return Check.warn(name, finding, advice);
  }

  List<Check> run() {
    List<Check> out = new ArrayList<>();
    List<RdmaInventory.Device> devices = inventory.devices();
    Path ib = inventory.sysfs().resolve("class/infiniband");
    if (devices.isEmpty()) {
      out.add(
          problem(
              "rdma-devices",
              "no RDMA device exists on this machine (" + ib + " is empty or missing)",
              "to use verbs install the NIC's RDMA driver and rdma-core (or load rdma_rxe for "
                  + "Soft-RoCE); with no RDMA NIC use provider=auto or tcp"));
    } else {
      out.add(Check.ok("rdma-devices", devices.size() + " device(s): " + inventory.summary()));
      for (RdmaInventory.Device d : devices) {
        for (RdmaInventory.Port p : d.ports()) {
          out.add(port(d, p));
        }
      }
      out.addAll(binding());
    }
    out.add(library());
    out.addAll(firewall());
    out.add(memlock());
    out.add(provider());
    return out;
  }

  private Check port(RdmaInventory.Device d, RdmaInventory.Port p) {
    String name = "port " + d.name() + "/" + p.number();
    String mtu =
        p.activeMtu().isPresent()
            ? "active MTU " + p.activeMtu().getAsInt() + " (" + p.mtuSource() + ")"
            : "active MTU unknown (" + p.mtuSource() + "; see ibv_devinfo)";
    String link =
        (p.linkLayer().isEmpty()
            ? "link layer unknown"
            : p.linkLayer() + (p.isEthernet() ? " (RoCE)" : ""));
    String finding = p.state() + ", " + p.physState() + ", " + link + ", " + mtu;
    if (!p.isActive() || !p.isLinkUp()) {
      return advisory(
          name,
          finding,
          "bring the link up: cable and switch port, `ip link set "
              + (d.netdevs().isEmpty() ? "<netdev>" : d.netdevs().get(0))
              + " up`"
              + (p.isEthernet() ? "" : ", and a running subnet manager (opensm) for InfiniBand"));
    }
    if (p.isEthernet() && p.activeMtu().isPresent() && p.activeMtu().getAsInt() < 4096) {
      return advisory(
          name,
          finding,
          "set the interface MTU to 9000 (and the switch ports) "
              + "for a 4096-byte RoCE MTU; larger packets mean fewer per read");
    }
    return Check.ok(name, finding);
  }

  private List<Check> binding() {
    List<Check> out = new ArrayList<>();
    VerbsProbe.Binding b;
    try {
      b = VerbsProbe.resolve(config, inventory);
    } catch (TransferConfigException e) {
      out.add(
          problem(
              "bind-address",
              e.getMessage(),
              "set bindAddress to an address of an "
                  + "RDMA interface (never a hostname guess), or device=<name>"));
      return out;
    }
    String where =
        b.address().getHostAddress()
            + " is served by "
            + b.device().name()
            + " port "
            + b.port().number()
            + " ("
            + b.how()
            + ")";
    out.add(
        b.port().isActive()
            ? Check.ok("bind-address", where)
            : problem(
                "bind-address",
                where + " but the port is " + b.port().state(),
                "bring that port up or bind to an address on an active port"));
    if (b.port().isEthernet()) {
      RdmaInventory.Gid v2 = null;
      RdmaInventory.Gid other = null;
      for (RdmaInventory.Gid g : b.port().gids()) {
        if (g.ipv4().map(b.address()::equals).orElse(false)) {
          if (g.isRoceV2()) {
            v2 = v2 == null ? g : v2;
          } else {
            other = other == null ? g : other;
          }
        }
      }
      if (v2 != null) {
        out.add(
            Check.ok(
                "roce-gid",
                "RoCE v2 GID index "
                    + v2.index()
                    + " ("
                    + v2.value()
                    + ") carries "
                    + b.address().getHostAddress()));
      } else if (other != null) {
        out.add(
            advisory(
                "roce-gid",
                "only a "
                    + other.type()
                    + " GID (index "
                    + other.index()
                    + ") carries "
                    + b.address().getHostAddress(),
                "use RoCE v2 (routable, ECN): check "
                    + "the NIC firmware and rdma_cm's default RoCE mode (configfs default_roce_mode)"));
      } else {
        out.add(
            advisory(
                "roce-gid",
                "no GID carries " + b.address().getHostAddress(),
                "the address must be configured on the RoCE interface itself (not on a bridge or "
                    + "a VLAN the NIC does not serve)"));
      }
    } else {
      out.add(
          Check.ok(
              "roce-gid",
              b.port().linkLayer()
                  + " link layer: GIDs are not "
                  + "address based, nothing to check"));
    }
    return out;
  }

  private Check library() {
    Optional<String> err = libraryError.get();
    Optional<Path> file = libraryFile.get();
    String where = file.map(f -> " (" + f + ")").orElse("");
    String build =
        "build libdisni from DiSNI 2.1's source (autotools with libibverbs-dev and "
            + "librdmacm-dev) and add its directory to -Djava.library.path or LD_LIBRARY_PATH";
    if (err.isPresent()) {
      return problem(
          "libdisni",
          err.get()
              + (file.isPresent()
                  ? "; a " + NativeLibrary.FILE_NAME + " exists at " + file.get()
                  : "; java.library.path=" + System.getProperty("java.library.path")),
          build);
    }
    OptionalInt v = libraryVersion.get();
    String loaded =
        "libdisni loaded"
            + where
            + ", JNI interface version "
            + (v.isPresent() ? v.getAsInt() : "unknown")
            + " (DiSNI 2.1 expects 32)";
    if (file.isEmpty()) {
      return Check.ok("libdisni", loaded + "; its file was not found, JNI functions not checked");
    }
    Optional<Class<?>> dispatcher = NativeLibrary.dispatcher();
    if (dispatcher.isEmpty()) {
      return Check.ok(
          "libdisni",
          loaded + "; DiSNI's classes are not on the class path, JNI " + "functions not checked");
    }
    java.util.Set<String> expected = NativeLibrary.expectedSymbols(dispatcher.get());
    java.util.Set<String> present;
    try {
      present = NativeLibrary.jniNames(file.get());
    } catch (java.io.IOException e) {
      return Check.ok(
          "libdisni",
          loaded + "; cannot read it to check its JNI functions (" + e.getMessage() + ")");
    }
    String disni = "DiSNI " + NativeLibrary.disniVersion(dispatcher.get().getClassLoader());
    List<String> missing = NativeLibrary.missing(expected, present);
    if (!missing.isEmpty()) {
      return problem(
          "libdisni",
          loaded
              + ", but it lacks "
              + missing.size()
              + " of the "
              + expected.size()
              + " JNI functions "
              + disni
              + " calls (e.g. "
              + missing.get(0).substring(missing.get(0).lastIndexOf('_') + 1)
              + "): it was built "
              + "from another DiSNI version, and verbs calls would fail with UnsatisfiedLinkError",
          build);
    }
    String prefix = "Java_" + NativeLibrary.mangle(NativeLibrary.DISPATCHER) + "_";
    List<String> extra = new ArrayList<>();
    for (String name : NativeLibrary.missing(present, expected)) {
      if (name.startsWith(prefix)) {
        extra.add(name);
      }
    }
    return Check.ok(
        "libdisni",
        loaded
            + "; all "
            + expected.size()
            + " JNI functions of "
            + disni
            + " present"
            + (extra.isEmpty() ? "" : " (plus " + extra.size() + " it does not call)"));
  }

  /** UDP 4791 (RoCE v2) and the node's TCP port against the host's input firewall rules. */
  private List<Check> firewall() {
    List<Firewall.Ruleset> sets = firewall.get();
    List<Check> out = new ArrayList<>();
    int port = config.port();
    out.add(
        flowCheck(
            "firewall-roce",
            "UDP 4791 (RoCE v2, also its RDMA CM messages)",
            new Firewall.Flow("udp", 4791),
            sets,
            config.provider() == ProviderKind.TCP,
            "-p udp --dport 4791",
            "udp dport 4791"));
    String what =
        port == 0
            ? "TCP port 0 (chosen at start: only rules for every port decide)"
            : "TCP " + port + " (node port: tcp provider, verbs authentication, iWARP RDMA CM)";
    out.add(
        flowCheck(
            "firewall-port",
            what,
            new Firewall.Flow("tcp", port == 0 ? -1 : port),
            sets,
            false,
            "-p tcp --dport " + (port == 0 ? "<port>" : port),
            "tcp dport " + (port == 0 ? "<port>" : port)));
    return out;
  }

  private Check flowCheck(
      String name,
      String what,
      Firewall.Flow flow,
      List<Firewall.Ruleset> sets,
      boolean unused,
      String iptablesMatch,
      String nftMatch) {
    List<String> read = new ArrayList<>();
    List<String> unreadable = new ArrayList<>();
    Firewall.Result worst = null;
    String worstSource = null;
    for (Firewall.Ruleset r : sets) {
      if (r.error != null) {
        unreadable.add(r.source + ": " + r.error);
        continue;
      }
      read.add(r.source);
      Firewall.Result v = r.verdict(flow);
      if (worst == null || rank(v.verdict) > rank(worst.verdict)) {
        worst = v;
        worstSource = r.source;
      }
    }
    if (worst == null) {
      String f =
          "cannot tell whether the host firewall drops "
              + what
              + " ("
              + String.join("; ", unreadable)
              + ")";
      boolean noTools = unreadable.stream().allMatch(u -> u.endsWith(": not installed"));
      String advice =
          noTools
              ? "neither tool is installed here; check the host's firewall "
                  + "another way, or save a ruleset elsewhere and pass it with --firewall FILE"
              : "run the doctor as root, or save `iptables-save` / `nft list ruleset` as root and "
                  + "pass the file with --firewall FILE";
      return unused ? Check.ok(name, f + " (not used: provider=tcp)") : Check.warn(name, f, advice);
    }
    String from = " per " + String.join(" and ", read);
    String note =
        "; hardware RoCE/iWARP NICs bypass the host firewall, Soft-RoCE (rxe) and "
            + "soft-iWARP (siw) traffic and the tcp provider do not";
    switch (worst.verdict) {
      case ACCEPTED:
        return Check.ok(name, what + " is accepted" + from + " (" + worst.why + ")");
      case DROPPED:
        return unused
            ? Check.ok(name, what + " is dropped" + from + " (not used: provider=tcp)")
            : Check.warn(
                name,
                what + " would be dropped: " + worst.why + " (" + worstSource + ")" + note,
                "allow it: `iptables -I INPUT "
                    + iptablesMatch
                    + " -j ACCEPT` or "
                    + "an nft rule `"
                    + nftMatch
                    + " accept` in the input chain");
      default:
        return unused
            ? Check.ok(name, what + ": " + worst.why + " (not used: provider=tcp)")
            : Check.warn(
                name,
                what + " may be dropped: " + worst.why + " (" + worstSource + ")" + note,
                "check that rule for this host's peers, or allow the port explicitly "
                    + "(`"
                    + iptablesMatch
                    + " -j ACCEPT`, nft `"
                    + nftMatch
                    + " accept`)");
    }
  }

  private static int rank(Firewall.Verdict v) {
    return v == Firewall.Verdict.DROPPED ? 2 : v == Firewall.Verdict.DEPENDS ? 1 : 0;
  }

  private Check memlock() {
    Optional<MemlockLimit> m = MemlockLimit.read(limitsFile);
    long budget = config.registrationBudget();
    if (m.isEmpty()) {
      // The verbs probe passes without it: the node starts, registrations may fail later.
      return advisory(
          "memlock",
          "cannot read the locked-memory limit from "
              + limitsFile
              + "; registrations fail if it is below "
              + TransferConfig.REGISTRATION_BUDGET
              + "="
              + budget,
          "check `ulimit -l`: it must cover " + TransferConfig.REGISTRATION_BUDGET + "=" + budget);
    }
    if (m.get().allows(budget)) {
      return Check.ok(
          "memlock",
          "ulimit -l is "
              + m.get().describeSoft()
              + ", covers "
              + TransferConfig.REGISTRATION_BUDGET
              + "="
              + budget);
    }
    return problem(
        "memlock",
        "ulimit -l is "
            + m.get().describeSoft()
            + ", below "
            + TransferConfig.REGISTRATION_BUDGET
            + "="
            + budget,
        "raise memlock (limits.conf `* - memlock unlimited`, "
            + "systemd LimitMEMLOCK=infinity, docker --ulimit memlock=-1) or lower "
            + TransferConfig.REGISTRATION_BUDGET);
  }

  private Check provider() {
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
          config.provider() == ProviderKind.TCP
              ? Optional.empty()
              : VerbsProbe.unavailableReason(config, inventory, limitsFile, libraryError);
      if (config.provider() == ProviderKind.TCP) {
        kind = ProviderKind.TCP;
        reason = "tcp requested by configuration";
      } else if (why.isPresent()) {
        if (config.provider() == ProviderKind.VERBS) {
          return Check.fail(
              "provider",
              "provider=verbs was requested but verbs cannot be used: " + why.get(),
              "fix the FAIL lines above or use provider=auto");
        }
        kind = ProviderKind.TCP;
        reason = "auto: verbs not used because " + why.get();
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
