package io.memwire.transfer.verbs;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Function;

/**
 * The RDMA devices of this machine as sysfs describes them ({@code <sysfs>/class/infiniband}):
 * ports, their state, link layer, MTU and GID table, and which device and port serve an address.
 * Shared by the verbs probe (which device owns the bind address) and {@code memwire doctor}. The
 * sysfs root and the lookup of a network interface's addresses are parameters, so tests run against
 * fake trees. {@link SysfsDevices} reads the records; this class answers from them.
 */
public final class RdmaInventory {
  /** The real sysfs. */
  public static final Path SYSFS = Path.of("/sys");

  private final Path sysfs;
  private final Function<String, List<InetAddress>> interfaceAddresses;

  /** Reads the device records from {@link #sysfs}. */
  private final SysfsDevices devices;

  /**
   * @param sysfs root of sysfs (normally {@code /sys})
   * @param interfaceAddresses addresses of a network interface by name (empty if unknown)
   */
  public RdmaInventory(Path sysfs, Function<String, List<InetAddress>> interfaceAddresses) {
    this.sysfs = sysfs;
    this.interfaceAddresses = interfaceAddresses;
    this.devices = new SysfsDevices(sysfs);
  }

  /** This machine: {@code /sys} and the JDK's view of network interfaces. */
  public static RdmaInventory system() {
    return new RdmaInventory(SYSFS, RdmaInventory::jdkInterfaceAddresses);
  }

  private static List<InetAddress> jdkInterfaceAddresses(String name) {
    try {
      NetworkInterface ni = NetworkInterface.getByName(name);
      return ni == null ? List.of() : Collections.list(ni.getInetAddresses());
    } catch (SocketException e) {
      return List.of();
    }
  }

  /** The sysfs root this inventory reads. */
  public Path sysfs() {
    return sysfs;
  }

  /**
   * One entry of a port's GID table.
   *
   * @param value as sysfs prints it, e.g. {@code 0000:0000:0000:0000:0000:ffff:c612:0001}
   * @param type {@code RoCE v2}, {@code IB/RoCE v1}, or empty when sysfs does not say
   * @param netdev the network interface this GID belongs to (RoCE), or empty
   */
  public record Gid(int index, String value, String type, String netdev) {
    public boolean isRoceV2() {
      return type.toLowerCase(Locale.ROOT).contains("v2");
    }

    /** The IPv4 address of an IPv4-mapped GID ({@code ::ffff:a.b.c.d}). */
    public Optional<InetAddress> ipv4() {
      String hex = value.replace(":", "");
      if (hex.length() != 32 || !hex.startsWith("00000000000000000000ffff")) {
        return Optional.empty();
      }
      byte[] a = new byte[4];
      for (int i = 0; i < 4; i++) {
        a[i] = (byte) Integer.parseInt(hex.substring(24 + 2 * i, 26 + 2 * i), 16);
      }
      try {
        return Optional.of(InetAddress.getByAddress(a));
      } catch (UnknownHostException e) {
        return Optional.empty();
      }
    }

    @Override
    public String toString() {
      return "gid "
          + index
          + " "
          + value
          + (type.isEmpty() ? "" : " (" + type + ")")
          + (netdev.isEmpty() ? "" : " on " + netdev);
    }
  }

  /**
   * One port of a device.
   *
   * @param state as sysfs prints it, e.g. {@code 4: ACTIVE}
   * @param physState e.g. {@code 5: LinkUp}
   * @param linkLayer {@code Ethernet} (RoCE), {@code InfiniBand}, or empty
   * @param activeMtu the active RDMA MTU in bytes (256 to 4096), when known
   * @param mtuSource where {@code activeMtu} came from (a sysfs file, or the netdev's MTU)
   */
  public record Port(
      String device,
      int number,
      String state,
      String physState,
      String linkLayer,
      OptionalInt activeMtu,
      String mtuSource,
      List<Gid> gids) {
    public boolean isActive() {
      return state.toUpperCase(Locale.ROOT).contains("ACTIVE");
    }

    public boolean isLinkUp() {
      return physState.toUpperCase(Locale.ROOT).contains("LINKUP");
    }

    public boolean isEthernet() {
      return linkLayer.equalsIgnoreCase("Ethernet");
    }

    @Override
    public String toString() {
      return device + " port " + number;
    }
  }

  /**
   * One RDMA device.
   *
   * @param netdevs network interfaces of this device (from GID netdevs and {@code device/net})
   * @param nodeType sysfs {@code node_type}, e.g. {@code 1: CA} (InfiniBand, RoCE) or {@code 4:
   *     RNIC}; may be empty
   */
  public record Device(String name, List<Port> ports, List<String> netdevs, String nodeType) {
    /**
     * Whether the device's transport is iWARP: the kernel gives every iWARP device the node type
     * RNIC (4), and no other transport uses it.
     */
    public boolean isIwarp() {
      String t = nodeType.trim();
      return t.startsWith("4:") || t.toUpperCase(Locale.ROOT).endsWith("RNIC");
    }

    @Override
    public String toString() {
      return name;
    }
  }

  /**
   * Which port of which device serves an address, and how that was found.
   *
   * @param carrier the GID entry carrying the address (RoCE), or null
   * @param how e.g. "RoCE v2 GID 1" or "interface ib0"
   */
  public record Owner(Device device, Port port, Gid carrier, String how) {
    /** The GID entry carrying the address (RoCE), if any. */
    public Optional<Gid> gid() {
      return Optional.ofNullable(carrier);
    }
  }

  /** Every device, sorted by name; empty when there is no {@code class/infiniband}. */
  public List<Device> devices() {
    return devices.all();
  }

  public Optional<Device> device(String name) {
    return devices.named(name);
  }

  /**
   * The device port serving {@code address}: a RoCE GID carrying it (RoCE v2 preferred), or else a
   * network interface of the device that has it (InfiniBand, iWARP).
   */
  public Optional<Owner> ownerOf(InetAddress address) {
    List<Device> devices = devices();
    Owner v1 = null;
    for (Device d : devices) {
      for (Port p : d.ports()) {
        for (Gid g : p.gids()) {
          if (g.ipv4().map(address::equals).orElse(false)) {
            if (g.isRoceV2()) {
              return Optional.of(new Owner(d, p, g, "RoCE v2 GID " + g.index()));
            }
            if (v1 == null) {
              v1 = new Owner(d, p, g, "GID " + g.index() + " (" + g.type() + ")");
            }
          }
        }
      }
    }
    if (v1 != null) {
      return Optional.of(v1);
    }
    for (Device d : devices) {
      for (String nd : d.netdevs()) {
        if (interfaceAddresses.apply(nd).contains(address) && !d.ports().isEmpty()) {
          return Optional.of(new Owner(d, d.ports().get(0), null, "interface " + nd));
        }
      }
    }
    return Optional.empty();
  }

  /** IPv4 addresses a device serves: its IPv4-mapped GIDs, then its interfaces' addresses. */
  public List<InetAddress> ipv4Addresses(Device d) {
    List<InetAddress> out = new ArrayList<>();
    for (Port p : d.ports()) {
      for (Gid g : p.gids()) {
        g.ipv4().filter(a -> !out.contains(a)).ifPresent(out::add);
      }
    }
    for (String nd : d.netdevs()) {
      for (InetAddress a : interfaceAddresses.apply(nd)) {
        if (a instanceof Inet4Address && !out.contains(a)) {
          out.add(a);
        }
      }
    }
    return out;
  }

  /**
   * IPv4 addresses one port of a device serves: its IPv4-mapped GIDs, then (the port's GIDs name no
   * address) the addresses of the device's interfaces.
   */
  public List<InetAddress> ipv4Addresses(Device d, Port port) {
    List<InetAddress> out = new ArrayList<>();
    for (Gid g : port.gids()) {
      g.ipv4().filter(a -> !out.contains(a)).ifPresent(out::add);
    }
    if (out.isEmpty()) {
      for (InetAddress a : ipv4Addresses(d)) {
        if (ownerOf(a).map(o -> o.port().number() == port.number()).orElse(true)) {
          out.add(a);
        }
      }
    }
    return out;
  }

  /** One line per device for messages: {@code rxe0 (198.18.0.1, port 1 ACTIVE)}. */
  public String summary() {
    List<String> parts = new ArrayList<>();
    for (Device d : devices()) {
      List<String> addrs = new ArrayList<>();
      for (InetAddress a : ipv4Addresses(d)) {
        addrs.add(a.getHostAddress());
      }
      List<String> ports = new ArrayList<>();
      for (Port p : d.ports()) {
        ports.add("port " + p.number() + " " + (p.isActive() ? "ACTIVE" : p.state()));
      }
      parts.add(
          d.name()
              + " ("
              + (addrs.isEmpty() ? "no IPv4 address" : String.join(", ", addrs))
              + "; "
              + String.join(", ", ports)
              + ")");
    }
    return parts.isEmpty() ? "none" : String.join("; ", parts);
  }
}
