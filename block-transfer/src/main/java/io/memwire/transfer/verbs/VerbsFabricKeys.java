package io.memwire.transfer.verbs;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.fabric.RoceDefaults;
import io.memwire.transfer.fabric.SysfsRoot;
import io.memwire.transfer.settings.FabricSettings;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the verbs provider does with the generic fabric keys {@code gidIndex}, {@code trafficClass}
 * and {@code serviceLevel}: DiSNI 2.1 cannot apply any of them per connection (no {@code
 * rdma_set_option}, no GID index, no path attributes), so a key whose value differs from what the
 * kernel will use gets one WARN naming it and the command that sets the kernel-wide default. The
 * node still starts: the keys are shared with ucx nodes, and the fabric path line says what is in
 * use. Never ignored silently.
 */
public final class VerbsFabricKeys {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsFabricKeys.class);

  private VerbsFabricKeys() {}

  /** Logs {@link #warnings} (one WARN each) for the node's binding. */
  public static void log(TransferConfig config, VerbsProbe.Binding binding) {
    try {
      for (String w : warnings(config, binding, SysfsRoot.SYSTEM)) {
        LOG.warn("{}", w);
      }
    } catch (RuntimeException e) { // a warning never stops a node
      LOG.warn("cannot compare the fabric keys with rdma_cm's defaults: {}", e.toString());
    }
  }

  /**
   * One sentence per fabric key set to a value the verbs provider will not use; empty when none is
   * set or each matches what rdma_cm uses on the bound port.
   */
  public static List<String> warnings(
      TransferConfig config, VerbsProbe.Binding binding, SysfsRoot root) {
    List<String> out = new ArrayList<>();
    RdmaInventory.Port port = binding.port();
    RoceDefaults roce = RoceDefaults.read(root, binding.device().name(), port.number());
    String where = binding.device().name() + " port " + port.number();
    config
        .trafficClass()
        .filter(tc -> !port.isEthernet() || tc != roce.tosInEffect())
        .ifPresent(
            tc ->
                out.add(
                    port.isEthernet()
                        ? cannot(FabricSettings.TRAFFIC_CLASS.name(), tc)
                            + "; rdma_cm uses traffic class "
                            + roce.tosInEffect()
                            + " on "
                            + where
                            + " ("
                            + roce.source()
                            + "). To use "
                            + tc
                            + " for every RDMA CM connection of that port, as root: "
                            + roce.commands(tc)
                        : cannot(FabricSettings.TRAFFIC_CLASS.name(), tc)
                            + "; "
                            + where
                            + " is not RoCE (link layer "
                            + port.linkLayer()
                            + "), where a traffic class has no meaning"));
    config
        .gidIndex()
        .ifPresent(
            gi -> {
              RdmaInventory.Gid wanted = null;
              RdmaInventory.Gid used = null;
              boolean v2 = roce.modeInEffect().toLowerCase(java.util.Locale.ROOT).contains("v2");
              for (RdmaInventory.Gid g : port.gids()) {
                if (g.index() == gi) {
                  wanted = g;
                }
                if (used == null
                    && g.ipv4().map(binding.address()::equals).orElse(false)
                    && g.isRoceV2() == v2) {
                  used = g;
                }
              }
              if (used != null && used.index() == gi) {
                return;
              }
              String s =
                  cannot(FabricSettings.GID_INDEX.name(), gi)
                      + "; rdma_cm picks the GID carrying "
                      + binding.address().getHostAddress()
                      + " of its default RoCE version ("
                      + roce.modeInEffect()
                      + ")"
                      + (used == null ? "" : ", GID " + used.index());
              if (wanted == null) {
                s += ", and " + where + " has no GID " + gi;
              } else if (!wanted.type().isEmpty()) {
                s +=
                    ". To choose GID "
                        + gi
                        + " ("
                        + wanted.type()
                        + wanted.ipv4().map(a -> ", " + a.getHostAddress()).orElse("")
                        + "), bind to its address and set rdma_cm's RoCE version; as root: "
                        + roce.commands(roce.tosInEffect())
                            .replace(RoceDefaults.RECOMMENDED_MODE, wanted.type());
              }
              out.add(s);
            });
    config
        .serviceLevel()
        .filter(sl -> sl != 0)
        .ifPresent(
            sl ->
                out.add(
                    cannot(FabricSettings.SERVICE_LEVEL.name(), sl)
                        + "; connections use the service level of the subnet manager's path"
                        + " record (0 unless its QoS policy says otherwise): set the SL for"
                        + " this node's traffic in the subnet manager's QoS policy"
                        + (port.isEthernet()
                            ? " (on RoCE the priority follows the traffic class instead)"
                            : "")));
    return out;
  }

  private static String cannot(String key, int value) {
    return key
        + "="
        + value
        + " is not applied by the verbs provider: DiSNI 2.1 cannot set it per connection";
  }
}
