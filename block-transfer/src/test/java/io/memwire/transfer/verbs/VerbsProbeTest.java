package io.memwire.transfer.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferConfigException;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The verbs probe and the sysfs inventory against fake trees: every reason, in words. */
class VerbsProbeTest {
  @TempDir Path tmp;

  private static final Optional<String> LIB_OK = Optional.empty();

  private static TransferConfigBuilder verbs() {
    return TransferConfig.builder()
        .provider(ProviderKind.VERBS)
        .registrationBudget(64 << 20)
        .poolMaxBytes(16 << 20);
  }

  private static RdmaInventory inventory(FakeSysfs fs, Map<String, List<InetAddress>> ifs) {
    return new RdmaInventory(fs.root(), n -> ifs.getOrDefault(n, List.of()));
  }

  private Optional<String> probe(
      TransferConfig c, FakeSysfs fs, Path limits, Optional<String> lib) {
    return VerbsProbe.unavailableReason(c, inventory(fs, Map.of()), limits, () -> lib);
  }

  @Test
  void noDeviceIsTheFirstReason() {
    FakeSysfs fs = new FakeSysfs(tmp);
    Optional<String> why =
        probe(
            verbs().build(),
            fs,
            fs.limits("unlimited", "unlimited"),
            Optional.of("libdisni is not loadable"));
    assertTrue(why.orElseThrow().startsWith("no RDMA device found"), why.toString());
  }

  @Test
  void missingLibdisniIsNamed() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 1500);
    Optional<String> why =
        probe(
            verbs().bindAddress("198.18.0.1").build(),
            fs,
            fs.limits("unlimited", "unlimited"),
            Optional.of("libdisni is not loadable (x)"));
    assertEquals("libdisni is not loadable (x)", why.orElseThrow());
  }

  @Test
  void bindAddressNotOnAnRdmaDeviceListsTheDevices() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 1500);
    String why =
        probe(
                verbs().bindAddress("127.0.0.1").build(),
                fs,
                fs.limits("unlimited", "unlimited"),
                LIB_OK)
            .orElseThrow();
    assertTrue(why.contains("bindAddress=127.0.0.1 is not an address of any RDMA device"), why);
    assertTrue(why.contains("rxe0 (198.18.0.1; port 1 ACTIVE)"), why);
  }

  @Test
  void downPortIsNamedWithItsState() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("mlx5_0", 1, false, "10.0.0.5", "ens1", 9000);
    String why =
        probe(
                verbs().bindAddress("10.0.0.5").build(),
                fs,
                fs.limits("unlimited", "unlimited"),
                LIB_OK)
            .orElseThrow();
    assertTrue(
        why.contains("mlx5_0 port 1") && why.contains("not active") && why.contains("1: DOWN"),
        why);
  }

  @Test
  void memlockBelowTheBudgetIsNamedWithBothNumbers() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 1500);
    String why =
        probe(
                verbs().bindAddress("198.18.0.1").build(),
                fs,
                fs.limits("8388608", "8388608"),
                LIB_OK)
            .orElseThrow();
    assertTrue(
        why.contains("ulimit -l")
            && why.contains("8388608 bytes")
            && why.contains("registrationBudget=" + (64 << 20)),
        why);
  }

  @Test
  void everythingInPlacePasses() {
    FakeSysfs fs = new FakeSysfs(tmp).rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 1500);
    assertEquals(
        Optional.empty(),
        probe(
            verbs().bindAddress("198.18.0.1").build(),
            fs,
            fs.limits("unlimited", "unlimited"),
            LIB_OK));
    assertEquals(
        Optional.empty(),
        probe(
            verbs().bindAddress("198.18.0.1").build(),
            fs,
            fs.limits(Long.toString(64 << 20), "unlimited"),
            LIB_OK));
  }

  @Test
  void deviceNameBindsToItsAddressAndAWrongPairIsRefused() throws Exception {
    FakeSysfs fs =
        new FakeSysfs(tmp)
            .rocePort("mlx5_0", 1, true, "10.0.0.5", "ens1", 9000)
            .rocePort("mlx5_1", 1, true, "10.0.1.5", "ens2", 1500);
    RdmaInventory inv = inventory(fs, Map.of());
    VerbsProbe.Binding b = VerbsProbe.resolve(verbs().device("mlx5_1").build(), inv);
    assertEquals(InetAddress.getByName("10.0.1.5"), b.address());
    assertEquals("mlx5_1", b.device().name());
    TransferConfigException e =
        assertThrows(
            TransferConfigException.class,
            () ->
                VerbsProbe.resolve(verbs().device("mlx5_1").bindAddress("10.0.0.5").build(), inv));
    assertTrue(
        e.getMessage().contains("belongs to RDMA device mlx5_0, not to device=mlx5_1"),
        e.getMessage());
    e =
        assertThrows(
            TransferConfigException.class,
            () -> VerbsProbe.resolve(verbs().device("mlx9").build(), inv));
    assertTrue(e.getMessage().startsWith("device=mlx9 is not an RDMA device here"), e.getMessage());
  }

  @Test
  void infinibandAddressIsFoundThroughItsInterface() throws Exception {
    FakeSysfs fs = new FakeSysfs(tmp).ibPort("mlx4_0", 1, true, "ib0");
    InetAddress a = InetAddress.getByName("192.168.77.3");
    RdmaInventory inv = inventory(fs, Map.of("ib0", List.of(a)));
    RdmaInventory.Owner o = inv.ownerOf(a).orElseThrow();
    assertEquals("mlx4_0", o.device().name());
    assertEquals("interface ib0", o.how());
    assertFalse(inv.ownerOf(InetAddress.getByName("192.168.77.4")).isPresent());
  }

  @Test
  void inventoryReadsPortsGidsAndDerivesTheRoceMtu() throws Exception {
    FakeSysfs fs =
        new FakeSysfs(tmp)
            .rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 1500)
            .rocePort("rxe1", 1, true, "198.19.0.1", "dummy1", 9000);
    RdmaInventory inv = inventory(fs, Map.of());
    List<RdmaInventory.Device> ds = inv.devices();
    assertEquals(2, ds.size());
    RdmaInventory.Port p = ds.get(0).ports().get(0);
    assertTrue(p.isActive() && p.isLinkUp() && p.isEthernet());
    assertEquals(OptionalInt.of(1024), p.activeMtu());
    assertEquals(OptionalInt.of(4096), ds.get(1).ports().get(0).activeMtu());
    assertEquals(2, p.gids().size(), "the all-zero GID entry is skipped");
    RdmaInventory.Gid g = p.gids().get(1);
    assertTrue(g.isRoceV2());
    assertEquals(InetAddress.getByName("198.18.0.1"), g.ipv4().orElseThrow());
    assertEquals(List.of("dummy0"), ds.get(0).netdevs());
    assertEquals(
        "RoCE v2 GID 1", inv.ownerOf(InetAddress.getByName("198.18.0.1")).orElseThrow().how());
  }

  @Test
  void memlockParsing() {
    FakeSysfs fs = new FakeSysfs(tmp);
    MemlockLimit m = MemlockLimit.read(fs.limits("65536", "unlimited")).orElseThrow();
    assertEquals(65536, m.softBytes().getAsLong());
    assertTrue(m.hardBytes().isEmpty());
    assertTrue(m.allows(65536) && !m.allows(65537));
    assertTrue(
        MemlockLimit.read(fs.limits("unlimited", "unlimited"))
            .orElseThrow()
            .allows(Long.MAX_VALUE));
    assertTrue(MemlockLimit.read(tmp.resolve("missing")).isEmpty());
  }

  @Test
  void deviceLimitsComeFromIbvDevinfoOrConservativeDefaults() {
    DeviceLimits l =
        DeviceLimits.parse(
            "hca_id:\trxe0\n\tmax_cqe:\t\t\t32767\n"
                + "\tmax_qp_rd_atom:\t\t\t128\n\tmax_qp_init_rd_atom:\t\t128\n",
            "test");
    assertEquals(128, l.maxQpRdAtom);
    assertEquals(32767, l.maxCqe);
    DeviceLimits d = DeviceLimits.parse("no such device", "test");
    assertEquals(DeviceLimits.DEFAULT_MAX_QP_RD_ATOM, d.maxQpRdAtom);
    assertTrue(d.source.startsWith("defaults"), d.source);
  }

  @Test
  void onThisMachineAutoFallsBackToTcpWithTheProbeReason() {
    // Holds on every machine without RDMA devices (CI, these hosts); on RDMA hosts it is moot.
    if (!RdmaInventory.system().devices().isEmpty()) {
      return;
    }
    Optional<String> why = VerbsProbe.unavailableReason(TransferConfig.defaults());
    assertTrue(why.orElseThrow().startsWith("no RDMA device found"), why.toString());
    assertEquals(
        ProviderKind.TCP,
        io.memwire.transfer.ProviderSelection.decide(TransferConfig.defaults()).kind());
  }
}
