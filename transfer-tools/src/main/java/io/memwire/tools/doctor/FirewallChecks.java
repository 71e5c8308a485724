package io.memwire.tools.doctor;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The host's input firewall against what the node needs: UDP 4791 (RoCE v2) and the node's TCP port
 * ({@code firewall-roce}, {@code firewall-port}).
 */
final class FirewallChecks {
  private final TransferConfig config;
  private final Supplier<List<Firewall.Ruleset>> firewall;

  FirewallChecks(TransferConfig config, Supplier<List<Firewall.Ruleset>> firewall) {
    this.config = config;
    this.firewall = firewall;
  }

  /** UDP 4791 (RoCE v2) and the node's TCP port against the host's input firewall rules. */
  List<Check> run() {
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
}
