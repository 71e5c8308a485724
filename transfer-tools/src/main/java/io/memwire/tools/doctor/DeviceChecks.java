package io.memwire.tools.doctor;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.verbs.RdmaInventory;
import io.memwire.transfer.verbs.VerbsProbe;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The RDMA devices and ports (sysfs): each port's state, link layer and MTU, then which device
 * serves the bind address and whether a RoCE v2 GID carries it.
 */
final class DeviceChecks {
  private final TransferConfig config;
  private final RdmaInventory inventory;
  private final VerbsImpact impact;

  DeviceChecks(TransferConfig config, RdmaInventory inventory, VerbsImpact impact) {
    this.config = config;
    this.inventory = inventory;
    this.impact = impact;
  }

  /**
   * {@code rdma-devices}, then with devices a check per port, {@code bind-address}, {@code
   * roce-gid}.
   */
  List<Check> run() {
    List<Check> out = new ArrayList<>();
    List<RdmaInventory.Device> devices = inventory.devices();
    Path ib = inventory.sysfs().resolve("class/infiniband");
    if (devices.isEmpty()) {
      out.add(
          impact.problem(
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
      return impact.advisory(
          name,
          finding,
          "bring the link up: cable and switch port, `ip link set "
              + (d.netdevs().isEmpty() ? "<netdev>" : d.netdevs().get(0))
              + " up`"
              + (p.isEthernet() ? "" : ", and a running subnet manager (opensm) for InfiniBand"));
    }
    if (p.isEthernet() && p.activeMtu().isPresent() && p.activeMtu().getAsInt() < 4096) {
      return impact.advisory(
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
          impact.problem(
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
            : impact.problem(
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
            impact.advisory(
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
            impact.advisory(
                "roce-gid",
                "no GID carries " + b.address().getHostAddress(),
                "the address must be configured on the RoCE interface itself (not on a bridge or "
                    + "a VLAN the NIC does not serve)"));
      }
      out.add(
          FabricChecks.roceDefaults(
              new io.memwire.transfer.fabric.SysfsRoot(inventory.sysfs()), b.port(), impact));
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
}
