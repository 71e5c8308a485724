package io.memwire.transfer.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.ibm.disni.verbs.IbvMr;
import io.memwire.transfer.TransferConfig;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Access flags of each registration, from the device's transport as sysfs gives it. */
class VerbsAccessTest {
  @TempDir Path tmp;

  private static final int REMOTE_WRITE = IbvMr.IBV_ACCESS_REMOTE_WRITE;

  @Test
  void transportComesFromTheNodeType() {
    FakeSysfs fs =
        new FakeSysfs(tmp)
            .rocePort("rxe0", 1, true, "198.18.0.1", "dummy0", 1500)
            .rocePort("siw0", 1, true, "10.1.0.7", "eth1", 1500)
            .nodeType("siw0", "4: RNIC")
            .ibPort("mlx4_0", 1, true, "ib0")
            .rocePort("odd0", 1, true, "10.2.0.7", "eth2", 1500)
            .nodeType("odd0", "");
    RdmaInventory inv = new RdmaInventory(fs.root(), n -> List.of());
    assertFalse(inv.device("rxe0").orElseThrow().isIwarp());
    assertEquals("1: CA", inv.device("rxe0").orElseThrow().nodeType());
    assertTrue(inv.device("siw0").orElseThrow().isIwarp());
    assertFalse(inv.device("mlx4_0").orElseThrow().isIwarp());
    assertFalse(inv.device("odd0").orElseThrow().isIwarp(), "unknown transport: not iWARP");
  }

  @Test
  void theBindingCarriesTheIwarpDevice() throws Exception {
    FakeSysfs fs =
        new FakeSysfs(tmp)
            .rocePort("siw0", 1, true, "10.1.0.7", "eth1", 1500)
            .nodeType("siw0", "4: RNIC");
    Map<String, List<InetAddress>> ifs = Map.of("eth1", List.of(InetAddress.getByName("10.1.0.7")));
    RdmaInventory inv = new RdmaInventory(fs.root(), n -> ifs.getOrDefault(n, List.of()));
    VerbsProbe.Binding b =
        VerbsProbe.resolve(TransferConfig.builder().bindAddress("10.1.0.7").build(), inv);
    assertTrue(b.device().isIwarp());
  }

  @Test
  void onlyIwarpReadDestinationsAreRemotelyWritable() {
    int iwarpDest = VerbsRegistrar.accessFor(VerbsRegistrar.Use.DESTINATION, true);
    assertEquals(IbvMr.IBV_ACCESS_LOCAL_WRITE | REMOTE_WRITE, iwarpDest);
    assertEquals(
        IbvMr.IBV_ACCESS_LOCAL_WRITE,
        VerbsRegistrar.accessFor(VerbsRegistrar.Use.DESTINATION, false));
    for (boolean iwarp : new boolean[] {false, true}) {
      int served = VerbsRegistrar.accessFor(VerbsRegistrar.Use.SERVED, iwarp);
      int file = VerbsRegistrar.accessFor(VerbsRegistrar.Use.FILE, iwarp);
      assertEquals(0, served & REMOTE_WRITE, "served memory is never remotely writable");
      assertEquals(IbvMr.IBV_ACCESS_REMOTE_READ | IbvMr.IBV_ACCESS_LOCAL_WRITE, served);
      assertEquals(IbvMr.IBV_ACCESS_REMOTE_READ, file, "file regions: remote read only");
    }
  }
}
