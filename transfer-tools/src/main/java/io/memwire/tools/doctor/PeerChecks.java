package io.memwire.tools.doctor;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.FabricDiagnosis;
import io.memwire.transfer.fabric.NicCounters;
import io.memwire.transfer.verbs.RdmaInventory;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Base64;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The two-node check: {@code --serve} starts a node with a test region filled with a known pattern
 * and prints its descriptor; {@code --peer} on another node opens a real connection to it and reads
 * the whole region one-sidedly, comparing every byte with the pattern.
 */
final class PeerChecks {
  private PeerChecks() {}

  /** The test pattern's byte at {@code i}: position dependent, so misplaced bytes show. */
  static byte pattern(long i) {
    return (byte) (i * 131 + 17 + (i >>> 8));
  }

  static ByteBuffer patternBuffer(int size) {
    return fill(ByteBuffer.allocateDirect(size));
  }

  /** Writes the pattern over the buffer's capacity. */
  static ByteBuffer fill(ByteBuffer b) {
    for (int i = 0; i < b.capacity(); i++) {
      b.put(i, pattern(i));
    }
    return b;
  }

  /** The encoded descriptor as one command-line word. */
  static String encode(RemoteRegion r) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString(r.toBytes());
  }

  static RemoteRegion decode(String s) {
    try {
      return RemoteRegion.fromBytes(Base64.getUrlDecoder().decode(s.trim()));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "--region "
              + s
              + " is not a region descriptor printed by "
              + "`doctor --serve`: "
              + e.getMessage(),
          e);
    }
  }

  /**
   * Serves a test region until {@code duration} passes or the thread is interrupted; prints the
   * descriptor and the command to run on the other node.
   */
  static void serve(TransferConfig config, int size, Duration duration, PrintStream out)
      throws InterruptedException {
    try (TransferNode node = TransferNode.start(config)) {
      // Released before the node closes: the node frees it once its region is released.
      BufferUnit memory = node.allocateRegistered(node.memory(), size, "doctor test region");
      fill(memory.buffer());
      MemoryRegion region = memory.region();
      String d = encode(region.remote());
      out.println(
          "serving a "
              + size
              + "-byte test region over "
              + node.provider()
              + " on "
              + node.localAddress().getAddress().getHostAddress()
              + ":"
              + node.localAddress().getPort()
              + " ("
              + node.selectionReason()
              + ")");
      out.println("region " + d);
      OptionalInt mtu = localMtu(RdmaInventory.system(), node.localAddress().getAddress());
      if (mtu.isPresent()) {
        out.println("RDMA MTU " + mtu.getAsInt() + " on this node's port");
      }
      out.println(
          "on the other node run: memwire doctor --peer "
              + node.localAddress().getAddress().getHostAddress()
              + ":"
              + node.localAddress().getPort()
              + " --region "
              + d
              + (mtu.isPresent() ? " --peer-mtu " + mtu.getAsInt() : ""));
      out.flush();
      try {
        Thread.sleep(duration.toMillis());
      } finally {
        memory.release();
      }
    }
  }

  /** The active RDMA MTU of the port carrying {@code address}, when known. */
  static OptionalInt localMtu(RdmaInventory inventory, InetAddress address) {
    return inventory.ownerOf(address).map(o -> o.port().activeMtu()).orElse(OptionalInt.empty());
  }

  /**
   * Compares this node's RDMA MTU (of the port carrying {@code address}) with the peer's, as {@code
   * doctor --serve} printed it there: different MTUs stall reads in one direction over rdma_cm.
   */
  static Check mtu(RdmaInventory inventory, InetAddress address, int peerMtu) {
    String name = "peer-mtu";
    Optional<RdmaInventory.Owner> o = inventory.ownerOf(address);
    if (o.isEmpty() || o.get().port().activeMtu().isEmpty()) {
      return Check.warn(
          name,
          "the peer's RDMA MTU is "
              + peerMtu
              + " but this node's is unknown ("
              + address.getHostAddress()
              + " is on no RDMA port with a known MTU)",
          "compare `ibv_devinfo` (active_mtu) on both nodes");
    }
    RdmaInventory.Port port = o.get().port();
    FabricDiagnosis.Finding f =
        FabricDiagnosis.compareMtus(
            port.device(), port.number(), port.activeMtu().getAsInt(), peerMtu);
    if (f.found()) {
      return Check.fail(
          name,
          f.message(),
          "ip link set <netdev of "
              + port.device()
              + "> mtu N on one end, so both ends' active_mtu match");
    }
    return Check.ok(
        name, port + " active MTU " + port.activeMtu().getAsInt() + ", the same as the peer's");
  }

  /**
   * {@code "; "} and the fabric cause the counters of the port carrying {@code local} show since
   * {@code before} ({@link FabricDiagnosis}), or "" when they show none or {@code already} (the
   * error being explained) names it already.
   */
  static String fabricCause(
      NicCounters nic,
      CounterSample before,
      RdmaInventory inventory,
      InetAddress local,
      OptionalInt peerMtu,
      boolean stalled,
      String already) {
    try {
      Optional<RdmaInventory.Owner> o = inventory.ownerOf(local);
      if (o.isEmpty() || before == null) {
        return "";
      }
      RdmaInventory.Port port = o.get().port();
      FabricDiagnosis.Finding f =
          FabricDiagnosis.diagnose(
              nic.sample().since(before),
              port.device(),
              port.number(),
              port.activeMtu(),
              peerMtu,
              stalled);
      if (!f.found()) {
        return "";
      }
      String head = f.message().substring(0, f.message().indexOf(':'));
      return already != null && already.contains(head) ? "" : "; " + f.message();
    } catch (RuntimeException e) { // an explanation never replaces the check's own result
      return "";
    }
  }

  /**
   * The fix for the fabric cause a failed peer check's {@code finding} names, else {@code usual}.
   */
  static String advice(String finding, String usual) {
    if (finding.contains("MTU mismatch")) {
      return "set the same MTU on both nodes' RDMA netdevs (run `doctor --serve` there and pass"
          + " its --peer-mtu here to compare)";
    }
    if (finding.contains("UDP 4791 unreachable")) {
      return "allow UDP port 4791 (RoCE v2) in both nodes' firewalls and on the path (nft list"
          + " ruleset, iptables-save, security groups)";
    }
    if (finding.contains("retransmissions:")) {
      return "RoCE needs a lossless fabric: enable PFC (or ECN) for the traffic class in use on"
          + " every switch and NIC on the path";
    }
    return usual;
  }

  /** Connects to {@code peer} and, when a region is given, reads it all and checks the bytes. */
  static Check peer(TransferConfig base, InetSocketAddress peer, RemoteRegion region) {
    return peer(base, peer, region, OptionalInt.empty());
  }

  /**
   * As {@link #peer(TransferConfig, InetSocketAddress, RemoteRegion)}, explaining a failure or a
   * lossy read by the NIC counters (and the peer's MTU, when given).
   */
  static Check peer(
      TransferConfig base, InetSocketAddress peer, RemoteRegion region, OptionalInt peerMtu) {
    String name = "peer";
    TransferConfig config = base;
    if (region != null) {
      RegionDescriptor d = region.segments().get(0);
      if (!d.node().equals(peer)) {
        return Check.fail(
            name,
            "--region belongs to " + d.node() + ", not to --peer " + peer,
            "pass the --peer and --region printed by the same `doctor --serve`");
      }
      config = base.toBuilder().provider(d.provider()).port(0).build();
    } else {
      config = base.toBuilder().port(0).build();
    }
    NicCounters nic = NicCounters.system();
    RdmaInventory inventory = RdmaInventory.system();
    CounterSample before = nic.sample();
    try (TransferNode node = TransferNode.start(config)) {
      InetAddress local = node.localAddress().getAddress();
      io.memwire.transfer.Connection c;
      long start = System.nanoTime();
      try {
        c = node.connection(peer);
      } catch (TransferException e) {
        String finding =
            "cannot connect to "
                + peer
                + " over "
                + node.provider()
                + ": "
                + e.getMessage()
                + fabricCause(nic, before, inventory, local, peerMtu, true, e.getMessage());
        return Check.fail(
            name,
            finding,
            advice(
                finding,
                "is `doctor --serve` (or a Memwire node) running there? open the "
                    + "port in the firewall"
                    + (node.provider().toString().equals("verbs")
                        ? "; for RoCE also check that both ends are in the same subnet or routed"
                        : "")));
      }
      long connectMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      if (region == null) {
        return Check.warn(
            name,
            "connected to "
                + peer
                + " over "
                + node.provider()
                + " in "
                + connectMs
                + " ms; no read done",
            "pass --region from `doctor --serve` to also " + "read a test region one-sidedly");
      }
      int len = (int) Math.min(region.length(), Integer.MAX_VALUE);
      long readStart = System.nanoTime();
      TransferBuffer b;
      try {
        b =
            c.read(ReadRequest.of(region, 0, len))
                .get(config.readTimeout().toMillis() + 5000, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        String finding =
            "connected to "
                + peer
                + " but the one-sided read of "
                + len
                + " bytes failed: "
                + e.getCause().getMessage()
                + fabricCause(
                    nic, before, inventory, local, peerMtu, true, e.getCause().getMessage());
        return Check.fail(
            name,
            finding,
            advice(
                finding,
                "the region may be gone (restart "
                    + "`doctor --serve` and use its new --region), or the path drops RDMA"
                    + " traffic"));
      } catch (TimeoutException e) {
        return Check.fail(
            name,
            "connected to "
                + peer
                + " but a read of "
                + len
                + " bytes did not complete in time"
                + fabricCause(nic, before, inventory, local, peerMtu, true, null),
            "check the network path (PFC/ECN on RoCE)");
      }
      long readUs = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - readStart);
      try {
        ByteBuffer v = b.nioBuffer();
        for (int i = 0; i < len; i++) {
          if (v.get(i) != pattern(i)) {
            return Check.fail(
                name,
                "read "
                    + len
                    + " bytes from "
                    + peer
                    + " but byte "
                    + i
                    + " differs from the test pattern",
                "data corruption on the path: report it");
          }
        }
      } finally {
        b.release();
      }
      // Different MTUs are the peer-mtu check's to say; a read that worked can only be lossy.
      String lossy = fabricCause(nic, before, inventory, local, OptionalInt.empty(), false, null);
      if (!lossy.isEmpty()) {
        return Check.warn(
            name,
            "read the "
                + len
                + "-byte test region from "
                + peer
                + " over "
                + node.provider()
                + " in "
                + readUs
                + " us, every byte correct, but"
                + lossy.substring(1),
            advice(lossy, "compare the NIC counters of both nodes (`memwire doctor`)"));
      }
      return Check.ok(
          name,
          "connected to "
              + peer
              + " over "
              + node.provider()
              + " in "
              + connectMs
              + " ms and read the "
              + len
              + "-byte test region one-sidedly in "
              + readUs
              + " us, every byte correct");
    } catch (RuntimeException e) {
      return Check.fail(
          name,
          "cannot start a local " + config.provider() + " node to test with: " + e.getMessage(),
          "fix the FAIL lines above");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Check.fail(name, "interrupted", "");
    }
  }
}
