package io.memwire.tools.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.fabric.RecordedSysfs;
import io.memwire.transfer.fabric.SysfsRoot;
import io.memwire.transfer.verbs.RdmaInventory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The doctor's rdma_cm defaults and NIC counter checks on recorded sysfs trees. */
class FabricChecksTest {
  @TempDir Path tmp;

  @Test
  void configuredRoceV2AndTosIsOk() {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "mlx5");
    RdmaInventory.Port p = port(sys, "mlx5_0");
    Check c = FabricChecks.roceDefaults(sys.root(), p, new VerbsImpact(ProviderKind.AUTO));
    assertEquals(Check.Status.OK, c.status(), c.line());
    assertTrue(
        c.finding().startsWith("RoCE v2, TOS 106 for every rdma_cm connection on mlx5_0 port 1"),
        c.line());
  }

  @Test
  void unconfiguredPortShowsTheDefaultsAndTheCommands() {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "rxe");
    Check c =
        FabricChecks.roceDefaults(
            sys.root(), port(sys, "rxe0"), new VerbsImpact(ProviderKind.AUTO));
    assertEquals(Check.Status.OK, c.status(), c.line());
    assertTrue(c.finding().contains("RoCE v2, TOS 0"), c.line());
    assertTrue(c.finding().contains("rdma_cm's built-in defaults"), c.line());
    assertTrue(
        c.finding().contains("mkdir -p " + tmp.resolve("kernel/config/rdma_cm/rxe0"))
            && c.finding().contains("echo 106 > "),
        c.line());
  }

  @Test
  void roceV1IsAWarningWithTheFix() throws Exception {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "mlx5");
    Files.writeString(
        tmp.resolve("kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode"), "IB/RoCE v1\n");
    Check c =
        FabricChecks.roceDefaults(
            sys.root(), port(sys, "mlx5_0"), new VerbsImpact(ProviderKind.VERBS));
    assertEquals(Check.Status.WARN, c.status(), c.line());
    assertTrue(c.advice().contains("echo 'RoCE v2' > "), c.line());
  }

  @Test
  void countersAreListedPerPortWithProblemsSinceBoot() {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "mlx5", "rxe");
    sys.set("class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence", 3);
    Check c = FabricChecks.counters(sys.root());
    assertEquals(Check.Status.OK, c.status());
    assertTrue(c.finding().contains("mlx5_0/1: 14 port counters, 14 hw counters"), c.line());
    assertTrue(c.finding().contains("rxe0/1: 0 port counters, 15 hw counters"), c.line());
    assertTrue(c.finding().contains("since boot: mlx5_0/1 out_of_sequence 3"), c.line());
  }

  @Test
  void noDeviceIsSaid() {
    Check c = FabricChecks.counters(new SysfsRoot(tmp));
    assertTrue(c.finding().startsWith("no RDMA device, no NIC counters"), c.line());
  }

  private RdmaInventory.Port port(RecordedSysfs sys, String device) {
    return new RdmaInventory(sys.root().path(), n -> List.of())
        .device(device)
        .orElseThrow()
        .ports()
        .get(0);
  }
}
