package io.memwire.transfer.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.verbs.RdmaInventory;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Counter reading, deltas and the report line on recorded rxe and mlx5 sysfs trees. */
class NicCountersTest {
  @TempDir Path dir;

  private final AtomicLong clock = new AtomicLong();

  private NicCounters counters(RecordedSysfs sys) {
    return new NicCounters(sys.root(), clock::get);
  }

  @Test
  void readsEveryCounterByItsDirectoryNameAndSkipsLifespan() {
    RecordedSysfs sys = RecordedSysfs.write(dir, "rxe", "mlx5");
    CounterSample s = counters(sys).sample();
    assertEquals(List.of("mlx5_0", "rxe0"), s.devices());
    assertEquals(120034, s.raw(new CounterKey("rxe0", 1, CounterKey.HARDWARE, "sent_pkts")));
    assertEquals(15, s.values().keySet().stream().filter(k -> k.device().equals("rxe0")).count());
    assertEquals(
        4294967000L, s.raw(new CounterKey("mlx5_0", 1, CounterKey.STANDARD, "port_xmit_data")));
    assertEquals(
        0, s.raw(new CounterKey("mlx5_0", 1, CounterKey.HARDWARE, "np_ecn_marked_roce_packets")));
    assertTrue(s.values().keySet().stream().noneMatch(k -> k.name().equals("lifespan")));
    assertEquals(List.of(), s.unreadable());
    // rxe has no counters/ directory: nothing standard is invented for it.
    assertTrue(
        s.values().keySet().stream()
            .noneMatch(k -> k.device().equals("rxe0") && k.group().equals(CounterKey.STANDARD)));
  }

  @Test
  void onlyTheDevicesAskedForAndTheMissingOnesSaid() {
    RecordedSysfs sys = RecordedSysfs.write(dir, "rxe", "mlx5");
    CounterSample s = counters(sys).sample(List.of("rxe0", "mlx5_9"));
    assertEquals(List.of("rxe0"), s.devices());
    assertTrue(s.values().keySet().stream().allMatch(k -> k.device().equals("rxe0")));
    assertEquals(1, s.unreadable().size());
    assertTrue(s.unreadable().get(0).startsWith("mlx5_9: no such device"), s.unreadable().get(0));
  }

  @Test
  void deltasUndoThe32BitWrapAndTheFourOctetUnits() {
    RecordedSysfs sys = RecordedSysfs.write(dir, "mlx5");
    NicCounters c = counters(sys);
    CounterSample before = c.sample();
    String port = "class/infiniband/mlx5_0/ports/1/";
    // port_xmit_data was 4294967000: 396 units later it has wrapped to 100.
    sys.set(port + "counters/port_xmit_data", 100);
    sys.set(port + "counters/port_rcv_data", 250000000L + 1000);
    sys.set(port + "hw_counters/out_of_sequence", 7);
    sys.set(port + "hw_counters/np_cnp_sent", 40);
    clock.addAndGet(2_000_000_000L);
    CounterDeltas d = c.sample().since(before);
    CounterKey xmit = new CounterKey("mlx5_0", 1, CounterKey.STANDARD, "port_xmit_data");
    assertEquals(396 * 4, d.get(xmit));
    assertEquals(4000, d.get(new CounterKey("mlx5_0", 1, CounterKey.STANDARD, "port_rcv_data")));
    assertEquals(7, d.get(new CounterKey("mlx5_0", 1, CounterKey.HARDWARE, "out_of_sequence")));
    assertEquals(2.0, d.seconds(), 1e-9);
    assertEquals(396 * 2, d.rate(xmit), 1e-9);
    assertTrue(
        d.notes().stream().anyMatch(n -> n.contains("port_xmit_data wrapped")),
        d.notes().toString());
    assertFalse(FabricReport.clean(d));
    List<String> lines = FabricReport.lines(d);
    assertEquals(2, lines.size(), lines.toString());
    assertTrue(
        lines.get(0).startsWith("fabric mlx5_0/1 over 2.0 s: sent 1.55 KiB, received 3.91 KiB"),
        lines.get(0));
    assertTrue(
        lines
            .get(0)
            .contains(
                "NOT clean: out-of-sequence 7 (out_of_sequence 7), ECN/CNP 40 (np_cnp_sent 40)"),
        lines.get(0));
  }

  @Test
  void a64BitCounterThatWentDownWasReset() {
    RecordedSysfs sys = RecordedSysfs.write(dir, "rxe");
    String f = "class/infiniband/rxe0/ports/1/hw_counters/sent_pkts";
    sys.set(f, 1L << 40);
    NicCounters c = counters(sys);
    CounterSample before = c.sample();
    sys.set(f, 5);
    CounterDeltas d = c.sample().since(before);
    assertEquals(5, d.get(new CounterKey("rxe0", 1, CounterKey.HARDWARE, "sent_pkts")));
    assertTrue(d.notes().stream().anyMatch(n -> n.contains("reset")), d.notes().toString());
  }

  @Test
  void aQuietRxeRunIsCleanAndSaysSo() {
    RecordedSysfs sys = RecordedSysfs.write(dir, "rxe");
    NicCounters c = counters(sys);
    CounterSample before = c.sample();
    sys.set("class/infiniband/rxe0/ports/1/hw_counters/sent_pkts", 120034 + 500);
    sys.set("class/infiniband/rxe0/ports/1/hw_counters/ack_deferred", 40);
    CounterDeltas d = c.sample().since(before);
    assertTrue(FabricReport.clean(d));
    assertEquals(
        List.of(
            "fabric rxe0/1 over 0.0 s: 500 packets sent, 0 packets received; clean: no"
                + " retransmissions, out-of-sequence packets, RNR NAKs, ECN marks or CNPs, buffer"
                + " drops or errors counted"),
        FabricReport.lines(d));
  }

  @Test
  void noDeviceIsOneLine() {
    NicCounters c = new NicCounters(new SysfsRoot(dir), clock::get);
    CounterDeltas d = c.sample().since(c.sample());
    assertTrue(d.noDevices());
    List<String> lines = FabricReport.lines(d);
    assertEquals(1, lines.size());
    assertTrue(lines.get(0).startsWith("fabric: no RDMA device on this node"), lines.get(0));
  }

  @Test
  void kindsComeFromNames() {
    assertEquals(FabricReport.Kind.RETRANSMISSION, FabricReport.kind("roce_adp_retrans"));
    assertEquals(FabricReport.Kind.RETRANSMISSION, FabricReport.kind("duplicate_request"));
    assertEquals(FabricReport.Kind.RETRANSMISSION, FabricReport.kind("local_ack_timeout_err"));
    assertEquals(FabricReport.Kind.SEQUENCE, FabricReport.kind("out_of_seq_request"));
    assertEquals(FabricReport.Kind.SEQUENCE, FabricReport.kind("implied_nak_seq_err"));
    assertEquals(FabricReport.Kind.RNR, FabricReport.kind("rnr_nak_retry_err"));
    assertEquals(FabricReport.Kind.CONGESTION, FabricReport.kind("np_ecn_marked_roce_packets"));
    assertEquals(FabricReport.Kind.CONGESTION, FabricReport.kind("rp_cnp_handled"));
    assertEquals(FabricReport.Kind.DROPS, FabricReport.kind("out_of_buffer"));
    assertEquals(FabricReport.Kind.DROPS, FabricReport.kind("port_xmit_discards"));
    assertEquals(FabricReport.Kind.ERRORS, FabricReport.kind("port_rcv_errors"));
    assertEquals(FabricReport.Kind.ERRORS, FabricReport.kind("link_downed"));
    assertEquals(FabricReport.Kind.TRAFFIC, FabricReport.kind("rx_read_requests"));
    assertEquals(FabricReport.Kind.TRAFFIC, FabricReport.kind("ack_deferred"));
  }

  @Test
  void rdmaCmDefaultsAndThePathLine() throws Exception {
    RecordedSysfs sys = RecordedSysfs.write(dir, "mlx5", "rxe");
    RoceDefaults set = RoceDefaults.read(sys.root(), "mlx5_0", 1);
    assertEquals("RoCE v2", set.mode().orElseThrow());
    assertEquals(106, set.tos().getAsInt());
    RoceDefaults unset = RoceDefaults.read(sys.root(), "rxe0", 1);
    assertFalse(unset.configured());
    assertEquals(0, unset.tosInEffect());
    assertTrue(
        unset
            .commands(106)
            .contains(
                "echo 106 > " + dir.resolve("kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos")),
        unset.commands(106));

    RdmaInventory inv = new RdmaInventory(dir, n -> List.of());
    RdmaInventory.Device mlx = inv.device("mlx5_0").orElseThrow();
    assertEquals(
        "fabric path: device mlx5_0 port 1, GID 3 (0000:0000:0000:0000:0000:ffff:c0a8:070b),"
            + " RoCE v2 (rdma_cm default_roce_mode), MTU 4096, traffic class 106 (rdma_cm"
            + " default_roce_tos)",
        FabricPath.describe(
            sys.root(), mlx, mlx.ports().get(0), InetAddress.getByName("192.168.7.11")));
    RdmaInventory.Device rxe = inv.device("rxe0").orElseThrow();
    String line =
        FabricPath.describe(sys.root(), rxe, rxe.ports().get(0), InetAddress.getByName("10.0.0.1"));
    assertTrue(line.contains("GID 3 ") && line.contains("RoCE v2 (rdma_cm default)"), line);
    assertTrue(line.endsWith("traffic class 0 (rdma_cm default)"), line);
  }
}
