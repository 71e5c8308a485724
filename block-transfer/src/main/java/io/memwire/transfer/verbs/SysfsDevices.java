package io.memwire.transfer.verbs;

import io.memwire.transfer.verbs.RdmaInventory.Device;
import io.memwire.transfer.verbs.RdmaInventory.Gid;
import io.memwire.transfer.verbs.RdmaInventory.Port;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Stream;

/**
 * Reads {@link RdmaInventory}'s records from sysfs ({@code <sysfs>/class/infiniband}, and {@code
 * class/net} for a RoCE port's netdev MTU): devices, their ports with state, link layer, active MTU
 * and GID table. A missing or unreadable attribute reads as empty, never as an error.
 *
 * <p>Threads: any thread; it keeps no state but the sysfs root and reads afresh on every call.
 */
final class SysfsDevices {
  private final Path sysfs;

  SysfsDevices(Path sysfs) {
    this.sysfs = sysfs;
  }

  private Path root() {
    return sysfs.resolve("class").resolve("infiniband");
  }

  /** Every device, sorted by name; empty when there is no {@code class/infiniband}. */
  List<Device> all() {
    List<Device> out = new ArrayList<>();
    for (Path d : list(root())) {
      out.add(readDevice(d));
    }
    out.sort(Comparator.comparing(Device::name));
    return out;
  }

  Optional<Device> named(String name) {
    Path d = root().resolve(name);
    return Files.isDirectory(d) ? Optional.of(readDevice(d)) : Optional.empty();
  }

  private Device readDevice(Path dir) {
    String name = dir.getFileName().toString();
    List<Port> ports = new ArrayList<>();
    List<String> netdevs = new ArrayList<>();
    for (Path p : list(dir.resolve("ports"))) {
      int number;
      try {
        number = Integer.parseInt(p.getFileName().toString());
      } catch (NumberFormatException e) {
        continue;
      }
      List<Gid> gids = readGids(p);
      for (Gid g : gids) {
        if (!g.netdev().isEmpty() && !netdevs.contains(g.netdev())) {
          netdevs.add(g.netdev());
        }
      }
      String linkLayer = read(p.resolve("link_layer"));
      OptionalInt mtu = OptionalInt.empty();
      String mtuSource = "unknown";
      String sysMtu = read(p.resolve("active_mtu"));
      if (!sysMtu.isEmpty()) {
        mtu = parseMtu(sysMtu);
        mtuSource = "sysfs active_mtu";
      } else if (linkLayer.equalsIgnoreCase("Ethernet")) {
        for (Gid g : gids) {
          String netMtu =
              g.netdev().isEmpty() ? "" : read(netClass().resolve(g.netdev()).resolve("mtu"));
          if (!netMtu.isEmpty()) {
            try {
              mtu = OptionalInt.of(roceMtu(Integer.parseInt(netMtu)));
              mtuSource = "from " + g.netdev() + " MTU " + netMtu;
              break;
            } catch (NumberFormatException ignored) {
              // keep looking
            }
          }
        }
      }
      ports.add(
          new Port(
              name,
              number,
              read(p.resolve("state")),
              read(p.resolve("phys_state")),
              linkLayer,
              mtu,
              mtuSource,
              gids));
    }
    ports.sort(Comparator.comparingInt(Port::number));
    for (Path n : list(dir.resolve("device").resolve("net"))) {
      String nd = n.getFileName().toString();
      if (!netdevs.contains(nd)) {
        netdevs.add(nd);
      }
    }
    return new Device(name, ports, netdevs, read(dir.resolve("node_type")));
  }

  private Path netClass() {
    return sysfs.resolve("class").resolve("net");
  }

  /** The RoCE MTU a netdev MTU allows: the largest IB MTU that fits with RoCE v2 headers. */
  static int roceMtu(int netdevMtu) {
    int room = netdevMtu - 96; // GRH/IP + UDP + BTH + extended headers + ICRC
    for (int m = 4096; m >= 256; m /= 2) {
      if (room >= m) {
        return m;
      }
    }
    return 256;
  }

  private static OptionalInt parseMtu(String s) {
    // "4096" or "5: 4096" styles
    String t = s.contains(":") ? s.substring(s.lastIndexOf(':') + 1).trim() : s.trim();
    try {
      return OptionalInt.of(Integer.parseInt(t));
    } catch (NumberFormatException e) {
      return OptionalInt.empty();
    }
  }

  private List<Gid> readGids(Path port) {
    List<Gid> out = new ArrayList<>();
    for (Path g : list(port.resolve("gids"))) {
      int idx;
      try {
        idx = Integer.parseInt(g.getFileName().toString());
      } catch (NumberFormatException e) {
        continue;
      }
      String value = read(g);
      if (value.isEmpty() || value.replace(":", "").replace("0", "").isEmpty()) {
        continue; // unset entry (newer kernels refuse to read them at all)
      }
      String type = read(port.resolve("gid_attrs").resolve("types").resolve(Integer.toString(idx)));
      String ndev = read(port.resolve("gid_attrs").resolve("ndevs").resolve(Integer.toString(idx)));
      out.add(new Gid(idx, value, type, ndev));
    }
    out.sort(Comparator.comparingInt(Gid::index));
    return out;
  }

  private static List<Path> list(Path dir) {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      List<Path> out = new ArrayList<>();
      s.forEach(out::add);
      out.sort(Comparator.comparing(p -> p.getFileName().toString()));
      return out;
    } catch (IOException e) {
      return List.of();
    }
  }

  /** A sysfs attribute, trimmed; empty when missing or unreadable (EINVAL for unset GIDs). */
  private static String read(Path f) {
    try {
      return new String(Files.readAllBytes(f), StandardCharsets.US_ASCII).trim();
    } catch (IOException e) {
      return "";
    }
  }
}
