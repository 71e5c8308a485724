package io.memwire.transfer.verbs;

import io.memwire.transfer.fabric.FabricDiagnosis;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * One port's MTUs as a verbs node reads them when a connection is set up: the port's active RDMA
 * MTU (256 to 4096) and the MTU of the network interface carrying the node's address (RoCE, IPoIB).
 * The serving node sends its own in the WELCOME of the TCP handshake ({@link VerbsAuthWire}); the
 * connecting node compares them with its own before it connects, because over rdma_cm both queue
 * pairs take the connecting side's path MTU.
 *
 * @param active the port's active RDMA MTU in bytes, when known
 * @param netdev the network interface, or empty when unknown
 * @param netdevMtu that interface's MTU, when known
 */
record PortMtu(OptionalInt active, String netdev, OptionalInt netdevMtu) {
  /** Nothing known: what an older peer's WELCOME (zeros there) decodes to. */
  static final PortMtu UNKNOWN = new PortMtu(OptionalInt.empty(), "", OptionalInt.empty());

  /** Bytes of the encoding: {@code u8 active MTU code | u16 netdev MTU}. */
  static final int WIRE_SIZE = 3;

  /**
   * Reads the port's MTUs now from {@code sysfs}: the port's {@code active_mtu} when the driver has
   * one, else (rxe has none) the RoCE MTU the interface's MTU allows, else {@code fallback}.
   */
  static PortMtu read(Path sysfs, String device, int port, String netdev, OptionalInt fallback) {
    OptionalInt netMtu =
        netdev.isEmpty()
            ? OptionalInt.empty()
            : parse(read(sysfs.resolve("class/net").resolve(netdev).resolve("mtu")));
    Path p = sysfs.resolve("class/infiniband").resolve(device).resolve("ports");
    p = p.resolve(Integer.toString(port));
    OptionalInt active = parse(read(p.resolve("active_mtu")));
    if (active.isEmpty()
        && netMtu.isPresent()
        && read(p.resolve("link_layer")).equalsIgnoreCase("Ethernet")) {
      active = OptionalInt.of(SysfsDevices.roceMtu(netMtu.getAsInt()));
    }
    return new PortMtu(active.isPresent() ? active : fallback, netdev, netMtu);
  }

  /** The bound port's MTUs now; the netdev is the one whose GID carries the bound address. */
  static PortMtu of(VerbsProbe.Binding b) {
    return read(
        RdmaInventory.SYSFS,
        b.device().name(),
        b.port().number(),
        netdevOf(b),
        b.port().activeMtu());
  }

  /** The interface carrying the bound address (its GID's), else the device's first one, or "". */
  static String netdevOf(VerbsProbe.Binding b) {
    for (RdmaInventory.Gid g : b.port().gids()) {
      if (!g.netdev().isEmpty() && g.ipv4().map(b.address()::equals).orElse(false)) {
        return g.netdev();
      }
    }
    for (RdmaInventory.Gid g : b.port().gids()) {
      if (!g.netdev().isEmpty()) {
        return g.netdev();
      }
    }
    return b.device().netdevs().isEmpty() ? "" : b.device().netdevs().get(0);
  }

  /**
   * {@code u8 active MTU (ibv_mtu: 1 = 256 ... 5 = 4096, 0 unknown) | u16 netdev MTU (0 unknown,
   * 65535 at most)}.
   */
  void put(ByteBuffer b) {
    b.put((byte) code(active));
    b.putShort(
        (short) (netdevMtu.isPresent() ? Math.min(0xffff, Math.max(0, netdevMtu.getAsInt())) : 0));
  }

  /** Decodes {@link #put}'s three bytes; zeros (an older peer) decode to {@link #UNKNOWN}. */
  static PortMtu get(ByteBuffer b) {
    int code = Byte.toUnsignedInt(b.get());
    int net = Short.toUnsignedInt(b.getShort());
    return new PortMtu(
        code >= 1 && code <= 5 ? OptionalInt.of(128 << code) : OptionalInt.empty(),
        "",
        net == 0 ? OptionalInt.empty() : OptionalInt.of(net));
  }

  /** ibv_mtu's code of an MTU in bytes, 0 when it is none of 256, 512, 1024, 2048, 4096. */
  static int code(OptionalInt mtu) {
    if (mtu.isPresent()) {
      for (int c = 1; c <= 5; c++) {
        if (128 << c == mtu.getAsInt()) {
          return c;
        }
      }
    }
    return 0;
  }

  /**
   * Whether a connection from this port (its active MTU is the path MTU over rdma_cm) to a serving
   * port with {@code peer}'s MTUs must be refused: {@link FabricDiagnosis#connectMtu}'s finding, or
   * none when either end's active MTU is unknown (an older peer, a port that does not say).
   */
  FabricDiagnosis.Finding refusal(String device, int port, PortMtu peer) {
    if (!known() || !peer.known()) {
      return new FabricDiagnosis.Finding(FabricDiagnosis.Cause.NONE, "");
    }
    return FabricDiagnosis.connectMtu(
        device,
        port,
        active.getAsInt(),
        netdev,
        netdevMtu,
        peer.active().getAsInt(),
        peer.netdevMtu());
  }

  boolean known() {
    return active.isPresent();
  }

  private static OptionalInt parse(String s) {
    // "4096", or "5: 4096" as some drivers print active_mtu
    String t = s.contains(":") ? s.substring(s.lastIndexOf(':') + 1).trim() : s.trim();
    try {
      return t.isEmpty() ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(t));
    } catch (NumberFormatException e) {
      return OptionalInt.empty();
    }
  }

  private static String read(Path f) {
    try {
      return new String(Files.readAllBytes(f), StandardCharsets.US_ASCII).trim();
    } catch (IOException e) {
      return "";
    }
  }
}
