package io.memwire.tools.doctor;

import io.memwire.transfer.fabric.CounterKey;
import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.FabricReport;
import io.memwire.transfer.fabric.NicCounters;
import io.memwire.transfer.fabric.RoceDefaults;
import io.memwire.transfer.fabric.SysfsRoot;
import io.memwire.transfer.verbs.RdmaInventory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The fabric's settings and counters: rdma_cm's per-port RoCE defaults (configfs; DiSNI cannot set
 * GID or TOS per connection, so these choose them) with the commands that set them, and which NIC
 * counters the node exposes with the problem counters that are not zero since boot.
 */
final class FabricChecks {
  private FabricChecks() {}

  /**
   * {@code roce-defaults} of the bind address's RoCE port: OK with rdma_cm's defaults or a
   * configured RoCE v2 (the commands to set a TOS in the finding when none is set), WARN when RoCE
   * v1 is configured.
   */
  static Check roceDefaults(SysfsRoot root, RdmaInventory.Port port, VerbsImpact impact) {
    RoceDefaults d = RoceDefaults.read(root, port.device(), port.number());
    String what =
        d.modeInEffect()
            + ", TOS "
            + d.tosInEffect()
            + " for every rdma_cm connection on "
            + port.device()
            + " port "
            + port.number()
            + " ("
            + d.source()
            + ")";
    String set = d.commands(RoceDefaults.RECOMMENDED_TOS);
    if (!d.modeInEffect().toLowerCase(java.util.Locale.ROOT).contains("v2")) {
      return impact.advisory(
          "roce-defaults",
          what,
          "use RoCE v2 (routable, ECN-capable) with an ECN-capable TOS (as root): " + set);
    }
    if (d.tosInEffect() == 0) {
      return Check.ok(
          "roce-defaults",
          what
              + "; to put Memwire's traffic in the switches' RoCE class (DSCP 26, ECN) run as"
              + " root: "
              + set);
    }
    return Check.ok("roce-defaults", what);
  }

  /**
   * {@code nic-counters}: what the kernel exposes per device, and the problem counters not at 0.
   */
  static Check counters(SysfsRoot root) {
    CounterSample s = new NicCounters(root, System::nanoTime).sample();
    if (s.noDevices()) {
      return Check.ok(
          "nic-counters", "no RDMA device, no NIC counters (" + root.infiniband() + ")");
    }
    Map<String, int[]> perWhere = new LinkedHashMap<>();
    List<String> problems = new ArrayList<>();
    for (Map.Entry<CounterKey, Long> e : s.values().entrySet()) {
      CounterKey k = e.getKey();
      int[] n = perWhere.computeIfAbsent(k.where(), w -> new int[2]);
      n[k.group().equals(CounterKey.STANDARD) ? 0 : 1]++;
      if (e.getValue() != 0 && FabricReport.kind(k.name()) != FabricReport.Kind.TRAFFIC) {
        problems.add(k.where() + " " + k.name() + " " + Long.toUnsignedString(e.getValue()));
      }
    }
    List<String> parts = new ArrayList<>();
    for (String d : s.devices()) {
      boolean any = false;
      for (Map.Entry<String, int[]> w : perWhere.entrySet()) {
        if (w.getKey().equals(d) || w.getKey().startsWith(d + "/")) {
          any = true;
          parts.add(
              w.getKey()
                  + ": "
                  + w.getValue()[0]
                  + " port counters, "
                  + w.getValue()[1]
                  + " hw counters");
        }
      }
      if (!any) {
        parts.add(d + ": none readable");
      }
    }
    String finding =
        String.join("; ", parts)
            + (s.unreadable().isEmpty() ? "" : "; unreadable: " + String.join(", ", s.unreadable()))
            + (problems.isEmpty()
                ? "; no retransmission, sequence, RNR, ECN/CNP, drop or error counter above 0"
                : "; since boot: " + String.join(", ", problems));
    return Check.ok("nic-counters", finding);
  }
}
