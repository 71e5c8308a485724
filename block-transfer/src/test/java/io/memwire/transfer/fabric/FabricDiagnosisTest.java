package io.memwire.transfer.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.fabric.FabricDiagnosis.Cause;
import io.memwire.transfer.fabric.FabricDiagnosis.Finding;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The three fabric pitfalls named from rxe counter deltas on a recorded sysfs tree, with the
 * figures the two Soft-RoCE guests showed (shared/softroce README, "Two guests", c to e).
 */
class FabricDiagnosisTest {
  private static final String HW = "class/infiniband/rxe0/ports/1/hw_counters/";

  @TempDir Path dir;

  private final AtomicLong clock = new AtomicLong();

  /** The deltas of the recorded rxe tree after adding {@code grow} to its counters over 45 s. */
  private CounterDeltas grown(Map<String, Long> grow) {
    RecordedSysfs sys = RecordedSysfs.write(dir, "rxe");
    NicCounters c = new NicCounters(sys.root(), clock::get);
    CounterSample before = c.sample();
    grow.forEach(
        (name, by) ->
            sys.set(
                HW + name, before.raw(new CounterKey("rxe0", 1, CounterKey.HARDWARE, name)) + by));
    clock.addAndGet(45_000_000_000L);
    return c.sample().since(before);
  }

  private static Finding diagnose(CounterDeltas d, int local, int peer, boolean stalled) {
    return FabricDiagnosis.diagnose(
        d,
        "rxe0",
        1,
        local > 0 ? OptionalInt.of(local) : OptionalInt.empty(),
        peer > 0 ? OptionalInt.of(peer) : OptionalInt.empty(),
        stalled);
  }

  @Test
  void rnrNaksOnAStalledReadAreAnMtuMismatch() {
    CounterDeltas d =
        grown(
            Map.of(
                "rcvd_rnr_err", 5122L,
                "completer_retry_err", 9L,
                "sent_pkts", 5131L,
                "rcvd_pkts", 5122L));
    Finding f = diagnose(d, 4096, 0, true);
    assertEquals(Cause.MTU_MISMATCH, f.cause());
    assertTrue(f.message().startsWith("MTU mismatch: the peer answers"), f.message());
    assertTrue(f.message().contains("rcvd_rnr_err +5122 over 45.0 s"), f.message());
    assertTrue(f.message().contains("rxe0 port 1 active MTU is 4096"), f.message());
    assertTrue(f.message().contains("the peer's is smaller"), f.message());
    // With the peer's MTU known both are named.
    Finding both = diagnose(d, 4096, 1024, true);
    assertEquals(Cause.MTU_MISMATCH, both.cause());
    assertTrue(
        both.message().contains("this node's rxe0 port 1 active MTU 4096, the peer's 1024"),
        both.message());
  }

  @Test
  void differentMtusAreAMismatchEvenBeforeAnyTraffic() {
    Finding f = diagnose(grown(Map.of()), 1024, 4096, false);
    assertEquals(Cause.MTU_MISMATCH, f.cause());
    assertTrue(f.message().contains("active MTU 1024, the peer's 4096"), f.message());
    assertFalse(diagnose(grown(Map.of()), 1024, 1024, true).found());
  }

  @Test
  void packetsSentAndNoneReceivedOnAStallAreAFirewall() {
    CounterDeltas d = grown(Map.of("completer_retry_err", 1903L, "sent_pkts", 1904L));
    Finding f = diagnose(d, 1024, 1024, true);
    assertEquals(Cause.UDP_4791_UNREACHABLE, f.cause());
    assertTrue(f.message().startsWith("UDP 4791 unreachable: rxe0 port 1 sent 1904"), f.message());
    assertTrue(f.message().contains("completer_retry_err +1903"), f.message());
    assertTrue(f.message().contains("received none over 45.0 s"), f.message());
    // The same counters on an exchange that completed are retransmissions, not a wall.
    assertEquals(Cause.RETRANSMISSIONS, diagnose(d, 1024, 1024, false).cause());
  }

  @Test
  void retriesAndSequenceErrorsOnACompletedRunAreLoss() {
    CounterDeltas d =
        grown(
            Map.of(
                "completer_retry_err", 2097L,
                "rcvd_seq_err", 2024L,
                "sent_pkts", 318317L,
                "rcvd_pkts", 1600L));
    Finding f = diagnose(d, 1024, 0, false);
    assertEquals(Cause.RETRANSMISSIONS, f.cause());
    assertTrue(
        f.message().startsWith("retransmissions: the fabric drops packets (PFC/ECN?): "),
        f.message());
    assertTrue(f.message().contains("completer_retry_err +2097"), f.message());
    assertTrue(f.message().contains("rcvd_seq_err +2024"), f.message());
    assertTrue(f.message().contains("318317 packets sent, 1600 received"), f.message());
  }

  @Test
  void cleanCountersAndAnotherDeviceFindNothing() {
    assertFalse(
        diagnose(grown(Map.of("sent_pkts", 100L, "rcvd_pkts", 102400L)), 0, 0, true).found());
    CounterDeltas d = grown(Map.of("completer_retry_err", 5L));
    assertFalse(
        FabricDiagnosis.diagnose(d, "mlx5_0", 1, OptionalInt.empty(), OptionalInt.empty(), true)
            .found());
  }

  /**
   * A stall while the peer's MTU is the larger one is not the MTU's doing (this node connected, the
   * path MTU is its own): the other causes are looked for.
   */
  @Test
  void aLargerPeerMtuDoesNotExplainAStall() {
    CounterDeltas d = grown(Map.of("sent_pkts", 12L, "rcvd_pkts", 0L, "rcvd_rnr_err", 3L));
    Finding f = diagnose(d, 1024, 4096, true);
    assertEquals(Cause.UDP_4791_UNREACHABLE, f.cause(), f.message());
    assertEquals(Cause.MTU_MISMATCH, diagnose(d, 4096, 1024, true).cause());
  }

  /**
   * Before connecting: a connecting port with the larger MTU is refused with both ends' figures,
   * the device, port and interface, and the command that fixes it; the other way round works.
   */
  @Test
  void aPathMtuThePeerCannotSendInIsRefusedBeforeConnecting() {
    Finding f =
        FabricDiagnosis.connectMtu(
            "rxe0", 1, 4096, "eth0", OptionalInt.of(4200), 1024, OptionalInt.of(1500));
    assertEquals(Cause.MTU_MISMATCH, f.cause());
    String m = f.message();
    assertTrue(m.startsWith("MTU mismatch: this node's rxe0 port 1 has active RDMA MTU 4096"), m);
    assertTrue(m.contains("(eth0 MTU 4200), the peer's 1024 (its interface's MTU 1500)"), m);
    assertTrue(m.contains("`ip link set dev eth0 mtu 1500` here"), m);
    assertTrue(m.contains("or the peer's interface to mtu 4200"), m);
    assertTrue(m.contains("or lower this node's path MTU to 1024 or less"), m);
    // Unknown interface figures still give both RDMA MTUs and a command to adapt.
    String bare =
        FabricDiagnosis.connectMtu(
                "mlx5_0", 2, 2048, "", OptionalInt.empty(), 1024, OptionalInt.empty())
            .message();
    assertTrue(bare.contains("mlx5_0 port 2 has active RDMA MTU 2048, the peer's 1024;"), bare);
    assertTrue(bare.contains("`ip link set dev DEV mtu N` on one of them"), bare);
    // The smaller side connecting takes its own MTU, which the peer can send in.
    assertFalse(
        FabricDiagnosis.connectMtu(
                "rxe0", 1, 1024, "eth0", OptionalInt.of(1500), 4096, OptionalInt.of(4200))
            .found());
    assertFalse(
        FabricDiagnosis.connectMtu(
                "rxe0", 1, 4096, "eth0", OptionalInt.empty(), 4096, OptionalInt.empty())
            .found());
  }
}
