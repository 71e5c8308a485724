package io.memwire.transfer.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.fabric.SysfsRoot;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The verbs provider and the generic fabric keys, on fake sysfs trees: {@code device=dev:port}
 * picks and checks the port; gidIndex, trafficClass and serviceLevel are never ignored silently.
 */
class VerbsFabricKeysTest {
  @TempDir Path tmp;

  private static TransferConfigBuilder verbs() {
    return TransferConfig.builder().provider(ProviderKind.VERBS);
  }

  private FakeSysfs twoPorts() {
    return new FakeSysfs(tmp)
        .rocePort("mlx5_0", 1, true, "10.0.0.5", "ens1", 9000)
        .rocePort("mlx5_0", 2, true, "10.0.2.5", "ens1b", 9000);
  }

  private RdmaInventory inventory(FakeSysfs fs) {
    return new RdmaInventory(fs.root(), n -> List.of());
  }

  @Test
  void devicePortPicksThatPortsAddress() throws Exception {
    RdmaInventory inv = inventory(twoPorts());
    VerbsProbe.Binding b = VerbsProbe.resolve(verbs().device("mlx5_0:2").build(), inv);
    assertEquals("mlx5_0", b.device().name());
    assertEquals(2, b.port().number());
    assertEquals(InetAddress.getByName("10.0.2.5"), b.address());
    b = VerbsProbe.resolve(verbs().device("mlx5_0:1").build(), inv);
    assertEquals(1, b.port().number());
    assertEquals(InetAddress.getByName("10.0.0.5"), b.address());
    b = VerbsProbe.resolve(verbs().device("mlx5_0:2").bindAddress("10.0.2.5").build(), inv);
    assertEquals(2, b.port().number());
  }

  @Test
  void aMissingPortOrAnAddressOfAnotherPortIsRefused() {
    RdmaInventory inv = inventory(twoPorts());
    TransferConfigException e =
        assertThrows(
            TransferConfigException.class,
            () -> VerbsProbe.resolve(verbs().device("mlx5_0:3").build(), inv));
    assertEquals("device=mlx5_0:3: mlx5_0 has no port 3 (ports: 1, 2)", e.getMessage());
    e =
        assertThrows(
            TransferConfigException.class,
            () ->
                VerbsProbe.resolve(
                    verbs().device("mlx5_0:1").bindAddress("10.0.2.5").build(), inv));
    assertTrue(
        e.getMessage().contains("belongs to RDMA device mlx5_0 port 2, not to device=mlx5_0:1"),
        e.getMessage());
    e =
        assertThrows(
            TransferConfigException.class,
            () -> VerbsProbe.resolve(verbs().device("mlx9:1").build(), inv));
    assertTrue(
        e.getMessage().startsWith("device=mlx9:1 names mlx9, which is not an RDMA device here"),
        e.getMessage());
  }

  @Test
  void theProbeReportsAMissingPort() {
    FakeSysfs fs = twoPorts();
    String why =
        VerbsProbe.unavailableReason(
                verbs().device("mlx5_0:4").build(),
                inventory(fs),
                fs.limits("unlimited", "unlimited"),
                java.util.Optional::empty)
            .orElseThrow();
    assertTrue(why.contains("mlx5_0 has no port 4"), why);
  }

  @Test
  void noKeysNoWarnings() {
    FakeSysfs fs = twoPorts();
    TransferConfig c = verbs().device("mlx5_0:1").build();
    assertEquals(
        List.of(),
        VerbsFabricKeys.warnings(
            c, VerbsProbe.resolve(c, inventory(fs)), new SysfsRoot(fs.root())));
  }

  @Test
  void aTrafficClassRdmaCmDoesNotUseIsWarnedWithTheCommand() {
    FakeSysfs fs = twoPorts();
    TransferConfig c = verbs().device("mlx5_0:1").set("trafficClass", "106").build();
    List<String> w =
        VerbsFabricKeys.warnings(c, VerbsProbe.resolve(c, inventory(fs)), new SysfsRoot(fs.root()));
    assertEquals(1, w.size(), w.toString());
    String s = w.get(0);
    assertTrue(
        s.startsWith(
            "trafficClass=106 is not applied by the verbs provider: DiSNI 2.1 cannot set it per"
                + " connection; rdma_cm uses traffic class 0 on mlx5_0 port 1"),
        s);
    assertTrue(s.contains("echo 106 > "), s);
    assertTrue(
        s.contains(
            fs.root().resolve("kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos").toString()),
        s);
  }

  @Test
  void aTrafficClassConfigfsAlreadyGivesIsQuiet() throws IOException {
    FakeSysfs fs = twoPorts();
    Path port = fs.root().resolve("kernel/config/rdma_cm/mlx5_0/ports/1");
    Files.createDirectories(port);
    Files.writeString(port.resolve("default_roce_tos"), "106\n");
    Files.writeString(port.resolve("default_roce_mode"), "RoCE v2\n");
    TransferConfig c =
        verbs().device("mlx5_0:1").set("trafficClass", "106").set("gidIndex", "1").build();
    assertEquals(
        List.of(),
        VerbsFabricKeys.warnings(
            c, VerbsProbe.resolve(c, inventory(fs)), new SysfsRoot(fs.root())));
  }

  @Test
  void aGidIndexOtherThanTheOneInUseIsWarned() {
    FakeSysfs fs = twoPorts();
    TransferConfig c = verbs().device("mlx5_0:1").set("gidIndex", "0").build();
    List<String> w =
        VerbsFabricKeys.warnings(c, VerbsProbe.resolve(c, inventory(fs)), new SysfsRoot(fs.root()));
    assertEquals(1, w.size(), w.toString());
    assertTrue(w.get(0).startsWith("gidIndex=0 is not applied by the verbs provider"), w.get(0));
    assertTrue(w.get(0).contains("RoCE v2), GID 1"), w.get(0));
    assertTrue(w.get(0).contains("echo 'IB/RoCE v1' > "), w.get(0));
    c = verbs().device("mlx5_0:1").set("gidIndex", "9").build();
    w = VerbsFabricKeys.warnings(c, VerbsProbe.resolve(c, inventory(fs)), new SysfsRoot(fs.root()));
    assertTrue(w.get(0).endsWith("mlx5_0 port 1 has no GID 9"), w.get(0));
  }

  @Test
  void aServiceLevelIsWarned() {
    FakeSysfs fs = new FakeSysfs(tmp).ibPort("mlx4_0", 1, true, "ib0");
    RdmaInventory inv =
        new RdmaInventory(
            fs.root(),
            n -> {
              try {
                return n.equals("ib0") ? List.of(InetAddress.getByName("192.168.77.3")) : List.of();
              } catch (java.net.UnknownHostException e) {
                throw new IllegalStateException(e);
              }
            });
    TransferConfig c =
        verbs().device("mlx4_0:1").set("serviceLevel", "3").set("trafficClass", "0").build();
    List<String> w =
        VerbsFabricKeys.warnings(c, VerbsProbe.resolve(c, inv), new SysfsRoot(fs.root()));
    assertEquals(2, w.size(), w.toString());
    assertTrue(w.get(0).contains("is not RoCE (link layer InfiniBand)"), w.get(0));
    assertTrue(w.get(1).startsWith("serviceLevel=3 is not applied"), w.get(1));
    assertTrue(w.get(1).contains("subnet manager's QoS policy"), w.get(1));
  }
}
