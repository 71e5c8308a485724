package io.memwire.transfer.fabric;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The fabric's health over a run in words: one line per device and port with the traffic and, by
 * kind, the counters that grew (retransmissions, out-of-sequence packets, RNR NAKs, ECN marks and
 * CNPs, drops for lack of buffers, errors), or one line saying there is no RDMA device. A counter's
 * kind is read from its name (substrings every driver's names share), so a driver's new counter
 * still lands somewhere.
 */
public final class FabricReport {
  private FabricReport() {}

  /** What a counter tells, from its name. */
  public enum Kind {
    /** Packets, bytes and requests. */
    TRAFFIC("traffic"),
    /** Retransmitted or duplicate requests, retries, ack timeouts. */
    RETRANSMISSION("retransmissions"),
    /** Out-of-sequence packets and sequence errors (NAKs). */
    SEQUENCE("out-of-sequence"),
    /** Receiver-not-ready NAKs and their retries. */
    RNR("RNR NAKs"),
    /** ECN-marked packets, CNPs sent and handled, time waiting to send. */
    CONGESTION("ECN/CNP"),
    /** Packets dropped for lack of receive buffers, discards. */
    DROPS("buffer drops"),
    /** Errors and link downs. */
    ERRORS("errors");

    private final String label;

    Kind(String label) {
      this.label = label;
    }

    /** The words used in a report line. */
    public String label() {
      return label;
    }
  }

  /** The kind of a counter, from its name. */
  public static Kind kind(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    if (n.contains("ecn") || n.contains("cnp") || n.contains("xmit_wait")) {
      return Kind.CONGESTION;
    }
    if (n.contains("rnr")) {
      return Kind.RNR;
    }
    if (n.contains("seq")) {
      return Kind.SEQUENCE;
    }
    if (n.contains("retrans")
        || n.contains("retry")
        || n.contains("duplicate")
        || n.contains("timeout")) {
      return Kind.RETRANSMISSION;
    }
    if (n.contains("out_of_buffer") || n.contains("discard") || n.contains("drop")) {
      return Kind.DROPS;
    }
    if (n.contains("link_down")
        || java.util.Arrays.stream(n.split("_"))
            .anyMatch(w -> w.equals("err") || w.equals("error") || w.equals("errors"))) {
      return Kind.ERRORS;
    }
    return Kind.TRAFFIC;
  }

  /** Whether no counter of a kind other than {@link Kind#TRAFFIC} grew. */
  public static boolean clean(CounterDeltas d) {
    for (Map.Entry<CounterKey, Long> e : d.values().entrySet()) {
      if (e.getValue() != 0 && kind(e.getKey().name()) != Kind.TRAFFIC) {
        return false;
      }
    }
    return true;
  }

  /**
   * One line per device (device-wide counters) and port that has counters, prefixed {@code fabric};
   * a single line when the node has no RDMA device.
   */
  public static List<String> lines(CounterDeltas d) {
    List<String> out = new ArrayList<>();
    if (d.noDevices()) {
      out.add(
          "fabric: no RDMA device on this node ("
              + d.after().root().infiniband()
              + " is missing or empty): no NIC counters to show");
      return out;
    }
    Map<String, List<Map.Entry<CounterKey, Long>>> byWhere = new LinkedHashMap<>();
    for (Map.Entry<CounterKey, Long> e : d.values().entrySet()) {
      byWhere.computeIfAbsent(e.getKey().where(), k -> new ArrayList<>()).add(e);
    }
    String over = String.format(Locale.ROOT, " over %.1f s: ", d.seconds());
    for (String device : d.after().devices()) {
      boolean any = false;
      for (Map.Entry<String, List<Map.Entry<CounterKey, Long>>> w : byWhere.entrySet()) {
        if (w.getKey().equals(device) || w.getKey().startsWith(device + "/")) {
          any = true;
          out.add("fabric " + w.getKey() + over + describe(w.getValue()));
        }
      }
      if (!any) {
        out.add(
            "fabric "
                + device
                + ": no counters readable (the driver exposes neither counters/ nor hw_counters/)");
      }
    }
    if (!d.notes().isEmpty()) {
      out.add("fabric notes: " + String.join("; ", d.notes()));
    }
    return out;
  }

  private static String describe(List<Map.Entry<CounterKey, Long>> counters) {
    long sentBytes = -1;
    long rcvdBytes = -1;
    long sentPackets = -1;
    long rcvdPackets = -1;
    Map<Kind, List<String>> bad = new EnumMap<>(Kind.class);
    Map<Kind, Long> sums = new EnumMap<>(Kind.class);
    for (Map.Entry<CounterKey, Long> e : counters) {
      String n = e.getKey().name();
      long v = e.getValue();
      Kind k = kind(n);
      if (k == Kind.TRAFFIC) {
        switch (n) {
          case "port_xmit_data" -> sentBytes = v;
          case "port_rcv_data" -> rcvdBytes = v;
          case "port_xmit_packets", "sent_pkts" -> sentPackets = Math.max(sentPackets, v);
          case "port_rcv_packets", "rcvd_pkts" -> rcvdPackets = Math.max(rcvdPackets, v);
          default -> {}
        }
      } else if (v != 0) {
        bad.computeIfAbsent(k, x -> new ArrayList<>()).add(n + " " + v);
        sums.merge(k, v, Long::sum);
      }
    }
    StringBuilder s = new StringBuilder();
    List<String> traffic = new ArrayList<>();
    if (sentBytes >= 0) {
      traffic.add("sent " + bytes(sentBytes));
    }
    if (rcvdBytes >= 0) {
      traffic.add("received " + bytes(rcvdBytes));
    }
    if (sentPackets >= 0) {
      traffic.add(sentPackets + " packets sent");
    }
    if (rcvdPackets >= 0) {
      traffic.add(rcvdPackets + " packets received");
    }
    s.append(traffic.isEmpty() ? "no traffic counters" : String.join(", ", traffic));
    if (bad.isEmpty()) {
      s.append(
          "; clean: no retransmissions, out-of-sequence packets, RNR NAKs, ECN marks or CNPs,"
              + " buffer drops or errors counted");
    } else {
      List<String> parts = new ArrayList<>();
      for (Map.Entry<Kind, List<String>> e : bad.entrySet()) {
        parts.add(
            e.getKey().label()
                + " "
                + sums.get(e.getKey())
                + " ("
                + String.join(", ", e.getValue())
                + ")");
      }
      s.append("; NOT clean: ").append(String.join(", ", parts));
    }
    return s.toString();
  }

  /** A byte count with a binary unit. */
  public static String bytes(long b) {
    if (b < 1024) {
      return b + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = b;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.2f %s", v, units[u]);
  }
}
