package io.memwire.transfer.fabric;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;

/**
 * Names the fabric pitfall behind a stalled or slow exchange with a peer from one port's counter
 * deltas over it and the two ends' MTUs: an MTU mismatch (the peer answers reads with RNR NAKs
 * because it cannot send packets of the connection's path MTU, or the MTUs are known to differ),
 * RoCE v2's UDP port 4791 unreachable (packets sent, none received), or retransmissions (the fabric
 * drops packets: no PFC, or ECN not configured). Counter names are matched by what they say, not by
 * one driver's list, as {@link FabricReport#kind} does.
 */
public final class FabricDiagnosis {
  private FabricDiagnosis() {}

  /** What went wrong on the fabric, most specific first. */
  public enum Cause {
    /** The two ends' RDMA MTUs differ and the larger one is used by the connection. */
    MTU_MISMATCH,
    /** Packets to the peer's UDP port 4791 get no answer (a firewall, an ACL). */
    UDP_4791_UNREACHABLE,
    /** The fabric drops packets: retries, duplicates and sequence errors grow. */
    RETRANSMISSIONS,
    /** No counter points at the fabric. */
    NONE
  }

  /**
   * A diagnosis: its cause and one sentence naming it with the figures ({@link #message} is empty
   * for {@link Cause#NONE}).
   */
  public record Finding(Cause cause, String message) {
    /** Whether a cause was found. */
    public boolean found() {
      return cause != Cause.NONE;
    }
  }

  /**
   * Diagnoses one port's counters over an exchange with a peer.
   *
   * @param d counter deltas over the exchange (or since its start, for one that stalled)
   * @param device the local device (e.g. {@code rxe0})
   * @param port the local port number
   * @param localMtu this port's active RDMA MTU, when known; this node is the connecting side, so
   *     it is the exchange's path MTU
   * @param peerMtu the peer's active RDMA MTU, when known
   * @param stalled true when the exchange did not complete (a timeout): the unreachable and MTU
   *     causes are considered only then (MTUs known and different are named also when it did not,
   *     but not for a stall when the peer's MTU is the larger: it can send in this node's)
   */
  public static Finding diagnose(
      CounterDeltas d,
      String device,
      int port,
      OptionalInt localMtu,
      OptionalInt peerMtu,
      boolean stalled) {
    long sent = -1;
    long rcvd = -1;
    long rnr = 0;
    List<String> rnrParts = new ArrayList<>();
    long retrans = 0;
    List<String> retransParts = new ArrayList<>();
    List<String> sentParts = new ArrayList<>();
    for (Map.Entry<CounterKey, Long> e : d.values().entrySet()) {
      CounterKey k = e.getKey();
      if (!k.device().equals(device) || (k.port() != port && k.port() != 0)) {
        continue;
      }
      String n = k.name();
      long v = e.getValue();
      switch (n) {
        case "sent_pkts", "port_xmit_packets" -> {
          sent = Math.max(sent, v);
          sentParts.add(n + " +" + v);
        }
        case "rcvd_pkts", "port_rcv_packets" -> rcvd = Math.max(rcvd, v);
        default -> {}
      }
      if (v == 0) {
        continue;
      }
      FabricReport.Kind kind = FabricReport.kind(n);
      String lower = n.toLowerCase(Locale.ROOT);
      if (kind == FabricReport.Kind.RNR && !lower.startsWith("send")) {
        // received RNR NAKs (rxe rcvd_rnr_err) and their retries; not the ones this node sent
        rnr += v;
        rnrParts.add(n + " +" + v);
      } else if (kind == FabricReport.Kind.RETRANSMISSION || kind == FabricReport.Kind.SEQUENCE) {
        retrans += v;
        retransParts.add(n + " +" + v);
      }
    }
    String over = String.format(Locale.ROOT, " over %.1f s", d.seconds());
    String where = device + " port " + port;
    boolean mtusKnown = localMtu.isPresent() && peerMtu.isPresent();
    // This node connected, so the path MTU is its own: one the peer can send in is not why it
    // stalled.
    boolean mtuRuledOut = stalled && mtusKnown && localMtu.getAsInt() <= peerMtu.getAsInt();
    if (mtusKnown && localMtu.getAsInt() != peerMtu.getAsInt() && !mtuRuledOut) {
      return mismatch(
          where,
          localMtu.getAsInt(),
          peerMtu.getAsInt(),
          rnr > 0 ? " (" + String.join(", ", rnrParts) + over + ")" : "");
    }
    if (stalled && rnr > 0 && !mtuRuledOut) {
      return new Finding(
          Cause.MTU_MISMATCH,
          "MTU mismatch: the peer answers this node's reads with RNR NAKs ("
              + String.join(", ", rnrParts)
              + over
              + "), which one-sided reads cause only when the peer cannot send its responses: "
              + "this node's "
              + where
              + " active MTU is "
              + (localMtu.isPresent() ? Integer.toString(localMtu.getAsInt()) : "unknown")
              + (peerMtu.isPresent()
                  ? ", the peer's " + peerMtu.getAsInt()
                  : ", the peer's is smaller (`memwire doctor --serve` on the peer prints it)")
              + ", and over rdma_cm the connection took the connecting side's: set the same MTU"
              + " on both ends' NICs");
    }
    if (stalled && sent > 0 && rcvd == 0) {
      return new Finding(
          Cause.UDP_4791_UNREACHABLE,
          "UDP 4791 unreachable: "
              + where
              + " sent "
              + sent
              + " RoCE v2 packets ("
              + String.join(", ", sentParts)
              + (retransParts.isEmpty() ? "" : ", " + String.join(", ", retransParts))
              + ") and received none"
              + over
              + ": a firewall (nftables, iptables, a security group) between the nodes drops"
              + " UDP port 4791, RoCE v2's port; allow it on both ends (`memwire doctor` lists"
              + " the rules)");
    }
    if (retrans > 0) {
      return new Finding(
          Cause.RETRANSMISSIONS,
          "retransmissions: the fabric drops packets (PFC/ECN?): "
              + String.join(", ", retransParts)
              + over
              + (sent >= 0
                  ? " (" + sent + " packets sent, " + Math.max(0, rcvd) + " received)"
                  : "")
              + "; a lossless RoCE fabric needs PFC on the traffic class in use, or ECN (DCQCN)"
              + " configured end to end");
    }
    return new Finding(Cause.NONE, "");
  }

  /**
   * Compares two ends' active RDMA MTUs: {@link Cause#MTU_MISMATCH} naming both when they differ,
   * {@link Cause#NONE} when they match.
   */
  public static Finding compareMtus(String device, int port, int localMtu, int peerMtu) {
    return localMtu == peerMtu
        ? new Finding(Cause.NONE, "")
        : mismatch(device + " port " + port, localMtu, peerMtu, "");
  }

  /**
   * Decides, before a connection is made, whether the peer can send at the path MTU it would take:
   * over rdma_cm both queue pairs take the connecting side's, so a connecting node whose active MTU
   * exceeds the serving peer's gets reads the peer cannot answer (they stall). {@link
   * Cause#MTU_MISMATCH} names both ends' MTUs, this node's device, port and interface, and the fix;
   * {@link Cause#NONE} when the peer can send (its MTU is at least this node's).
   *
   * @param device this node's device (e.g. {@code rxe0})
   * @param port its port number
   * @param localMtu this port's active RDMA MTU: the path MTU a connection from here takes
   * @param localNetdev the interface carrying this node's address, or empty
   * @param localNetdevMtu that interface's MTU, when known
   * @param peerMtu the serving peer's active RDMA MTU
   * @param peerNetdevMtu the MTU of the peer's interface, when known
   */
  public static Finding connectMtu(
      String device,
      int port,
      int localMtu,
      String localNetdev,
      OptionalInt localNetdevMtu,
      int peerMtu,
      OptionalInt peerNetdevMtu) {
    if (peerMtu >= localMtu) {
      return new Finding(Cause.NONE, "");
    }
    String dev = localNetdev.isEmpty() ? "DEV" : localNetdev;
    String fix =
        peerNetdevMtu.isPresent()
            ? "`ip link set dev "
                + dev
                + " mtu "
                + peerNetdevMtu.getAsInt()
                + "` here"
                + (localNetdevMtu.isPresent()
                    ? ", or the peer's interface to mtu " + localNetdevMtu.getAsInt()
                    : "")
            : "`ip link set dev " + dev + " mtu N` on one of them";
    return new Finding(
        Cause.MTU_MISMATCH,
        "MTU mismatch: this node's "
            + device
            + " port "
            + port
            + " has active RDMA MTU "
            + localMtu
            + (localNetdevMtu.isPresent()
                ? " (" + dev + " MTU " + localNetdevMtu.getAsInt() + ")"
                : "")
            + ", the peer's "
            + peerMtu
            + (peerNetdevMtu.isPresent()
                ? " (its interface's MTU " + peerNetdevMtu.getAsInt() + ")"
                : "")
            + "; over rdma_cm a connection takes the connecting side's path MTU, "
            + localMtu
            + ", in which the peer cannot send its read responses, so every read would stall:"
            + " set both ends' interface MTUs equal ("
            + fix
            + "), or lower this node's path MTU to "
            + peerMtu
            + " or less");
  }

  private static Finding mismatch(String where, int local, int peer, String evidence) {
    return new Finding(
        Cause.MTU_MISMATCH,
        "MTU mismatch: this node's "
            + where
            + " active MTU "
            + local
            + ", the peer's "
            + peer
            + "; over rdma_cm a connection takes the connecting side's path MTU, so the side"
            + " with the smaller MTU cannot send its read responses"
            + evidence
            + ": set the same MTU on both ends' NICs (ip link set DEV mtu N)");
  }
}
