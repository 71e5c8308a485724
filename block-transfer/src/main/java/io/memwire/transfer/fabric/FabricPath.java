package io.memwire.transfer.fabric;

import io.memwire.transfer.verbs.RdmaInventory;
import java.net.InetAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one line naming the path a verbs node's traffic takes: device, port, GID, RoCE version, MTU
 * and traffic class in use. The RoCE version and TOS are rdma_cm's per-port defaults ({@link
 * RoceDefaults}); the GID is the one of that version carrying the bound address.
 */
public final class FabricPath {
  private static final Logger LOG = LoggerFactory.getLogger(FabricPath.class);

  private FabricPath() {}

  /** Logs {@link #describe} at INFO (the verbs provider calls it once it has started). */
  public static void log(
      RdmaInventory.Device device, RdmaInventory.Port port, InetAddress address) {
    try {
      LOG.info("{}", describe(SysfsRoot.SYSTEM, device, port, address));
    } catch (RuntimeException e) { // a line of information never stops a node
      LOG.info(
          "fabric path of {} port {}: unknown ({})", device.name(), port.number(), e.toString());
    }
  }

  /**
   * {@code fabric path: device mlx5_0 port 1, GID 3 (0000:...:0a00:0001), RoCE v2, MTU 4096,
   * traffic class 106 (rdma_cm default_roce_tos)}.
   */
  public static String describe(
      SysfsRoot root, RdmaInventory.Device device, RdmaInventory.Port port, InetAddress address) {
    StringBuilder s =
        new StringBuilder("fabric path: device ")
            .append(device.name())
            .append(" port ")
            .append(port.number())
            .append(", ");
    RoceDefaults roce = RoceDefaults.read(root, device.name(), port.number());
    if (port.isEthernet()) {
      String mode = roce.modeInEffect();
      boolean v2 = mode.toLowerCase(java.util.Locale.ROOT).contains("v2");
      RdmaInventory.Gid gid = null;
      for (RdmaInventory.Gid g : port.gids()) {
        if (g.ipv4().map(address::equals).orElse(false) && g.isRoceV2() == v2) {
          gid = g;
          break;
        }
      }
      s.append(
              gid == null
                  ? "no " + mode + " GID carries " + address.getHostAddress()
                  : "GID " + gid.index() + " (" + gid.value() + ")")
          .append(", ")
          .append(mode)
          .append(roce.mode().isPresent() ? " (rdma_cm default_roce_mode)" : " (rdma_cm default)");
    } else {
      s.append(
          port.linkLayer().isEmpty() ? "link layer unknown" : port.linkLayer() + " link layer");
    }
    s.append(", MTU ")
        .append(
            port.activeMtu().isPresent()
                ? Integer.toString(port.activeMtu().getAsInt())
                : "unknown")
        .append(", traffic class ")
        .append(roce.tosInEffect())
        .append(roce.tos().isPresent() ? " (rdma_cm default_roce_tos)" : " (rdma_cm default)");
    return s.toString();
  }
}
