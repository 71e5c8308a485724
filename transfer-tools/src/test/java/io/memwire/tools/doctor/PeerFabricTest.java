package io.memwire.tools.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.NicCounters;
import io.memwire.transfer.fabric.RecordedSysfs;
import io.memwire.transfer.verbs.RdmaInventory;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The doctor's peer checks name the fabric pitfalls: the two ends' MTUs compared ({@code
 * --peer-mtu}), and a failed or lossy peer read explained by the NIC counters, on recorded sysfs
 * trees.
 */
class PeerFabricTest {
  private static final String RXE = "class/infiniband/rxe0/ports/1/hw_counters/";

  @TempDir Path tmp;

  private final AtomicLong clock = new AtomicLong();

  private RdmaInventory inventory(RecordedSysfs sys) {
    return new RdmaInventory(sys.root().path(), n -> List.of());
  }

  @Test
  void differentMtusFailNamingBoth() throws Exception {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "mlx5");
    Check c = PeerChecks.mtu(inventory(sys), InetAddress.getByName("192.168.7.11"), 1024);
    assertEquals(Check.Status.FAIL, c.status(), c.line());
    assertTrue(
        c.finding()
            .startsWith("MTU mismatch: this node's mlx5_0 port 1 active MTU 4096, the peer's 1024"),
        c.line());
    assertTrue(c.advice().contains("mtu"), c.line());
    Check same = PeerChecks.mtu(inventory(sys), InetAddress.getByName("192.168.7.11"), 4096);
    assertEquals(Check.Status.OK, same.status(), same.line());
  }

  @Test
  void anAddressOnNoRdmaPortIsAWarning() throws Exception {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "mlx5");
    Check c = PeerChecks.mtu(inventory(sys), InetAddress.getByName("192.168.9.9"), 1024);
    assertEquals(Check.Status.WARN, c.status(), c.line());
    assertTrue(c.finding().contains("the peer's RDMA MTU is 1024"), c.line());
  }

  @Test
  void aStalledPeerWithPacketsOutAndNoneBackIsAFirewall() throws Exception {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "rxe");
    NicCounters nic = new NicCounters(sys.root(), clock::get);
    CounterSample before = nic.sample();
    sys.set(RXE + "sent_pkts", 120034 + 3);
    clock.addAndGet(20_000_000_000L);
    InetAddress a = InetAddress.getByName("10.0.0.1");
    String why =
        PeerChecks.fabricCause(
            nic, before, inventory(sys), a, OptionalInt.empty(), true, "connect timed out");
    assertTrue(why.startsWith("; UDP 4791 unreachable: rxe0 port 1 sent 3 RoCE v2 packets"), why);
    assertTrue(why.contains("received none over 20.0 s"), why);
    // The provider's own message said it already: not repeated.
    assertEquals(
        "",
        PeerChecks.fabricCause(
            nic,
            before,
            inventory(sys),
            a,
            OptionalInt.empty(),
            true,
            "did not complete; UDP 4791 unreachable: rxe0 ..."));
  }

  @Test
  void aCompletedReadWithRetriesIsLoss() throws Exception {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "rxe");
    NicCounters nic = new NicCounters(sys.root(), clock::get);
    CounterSample before = nic.sample();
    sys.set(RXE + "completer_retry_err", 224);
    sys.set(RXE + "rcvd_pkts", 118877 + 145142);
    clock.addAndGet(23_000_000_000L);
    String why =
        PeerChecks.fabricCause(
            nic,
            before,
            inventory(sys),
            InetAddress.getByName("10.0.0.1"),
            OptionalInt.empty(),
            false,
            null);
    assertTrue(
        why.startsWith(
            "; retransmissions: the fabric drops packets (PFC/ECN?): completer_retry_err +224"),
        why);
    // Clean counters: nothing to add.
    CounterSample now = nic.sample();
    assertEquals(
        "",
        PeerChecks.fabricCause(
            nic,
            now,
            inventory(sys),
            InetAddress.getByName("10.0.0.1"),
            OptionalInt.empty(),
            false,
            null));
  }

  @Test
  void theAdviceFollowsTheCause() {
    assertTrue(PeerChecks.advice("x; MTU mismatch: ...", "usual").startsWith("set the same MTU"));
    assertTrue(
        PeerChecks.advice("x; UDP 4791 unreachable: ...", "usual")
            .startsWith("allow UDP port 4791"));
    assertTrue(
        PeerChecks.advice("retransmissions: the fabric drops", "usual").contains("enable PFC"));
    assertEquals("usual", PeerChecks.advice("connection refused", "usual"));
  }
}
