package io.memwire.transfer.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.fabric.FabricDiagnosis;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A port's MTUs from a fake sysfs, and their three bytes in the handshake's WELCOME. */
class PortMtuTest {
  @TempDir Path dir;

  @Test
  void rxeFollowsItsInterfacesMtu() throws IOException {
    FakeSysfs sys = new FakeSysfs(dir).rocePort("rxe0", 1, true, "198.18.0.2", "eth0", 1500);
    PortMtu m = PortMtu.read(dir, "rxe0", 1, "eth0", OptionalInt.empty());
    assertEquals(new PortMtu(OptionalInt.of(1024), "eth0", OptionalInt.of(1500)), m);
    // Read when asked, not at start: the pitfall check changes the MTU under a running node.
    Files.writeString(sys.root().resolve("class/net/eth0/mtu"), "4200\n");
    assertEquals(
        OptionalInt.of(4096), PortMtu.read(dir, "rxe0", 1, "eth0", OptionalInt.empty()).active());
  }

  @Test
  void aDriversActiveMtuWins() throws IOException {
    new FakeSysfs(dir).rocePort("mlx5_0", 1, true, "10.0.0.1", "ens1", 9000);
    Files.writeString(dir.resolve("class/infiniband/mlx5_0/ports/1/active_mtu"), "4: 2048\n");
    PortMtu m = PortMtu.read(dir, "mlx5_0", 1, "ens1", OptionalInt.empty());
    assertEquals(OptionalInt.of(2048), m.active());
    assertEquals(OptionalInt.of(9000), m.netdevMtu());
  }

  @Test
  void nothingReadableFallsBackToTheMtuKnownAtStart() {
    new FakeSysfs(dir).ibPort("mlx4_0", 1, true, "ib0");
    PortMtu m = PortMtu.read(dir, "mlx4_0", 1, "ib0", OptionalInt.of(4096));
    assertEquals(OptionalInt.of(4096), m.active());
    assertFalse(m.netdevMtu().isPresent());
  }

  @Test
  void theInterfaceIsTheOneWhoseGidCarriesTheBoundAddress() throws Exception {
    new FakeSysfs(dir).rocePort("rxe0", 1, true, "198.18.0.2", "eth1", 1500);
    RdmaInventory inv = new RdmaInventory(dir, n -> List.of());
    InetAddress a = InetAddress.getByName("198.18.0.2");
    RdmaInventory.Owner o = inv.ownerOf(a).orElseThrow();
    assertEquals(
        "eth1", PortMtu.netdevOf(new VerbsProbe.Binding(o.device(), o.port(), a, o.how())));
  }

  @Test
  void everyIbMtuAndInterfaceMtuSurvivesTheWire() {
    for (int mtu = 256; mtu <= 4096; mtu *= 2) {
      for (int net : new int[] {1500, 4200, 9000, 65535}) {
        PortMtu m = new PortMtu(OptionalInt.of(mtu), "eth0", OptionalInt.of(net));
        ByteBuffer b = ByteBuffer.allocate(PortMtu.WIRE_SIZE);
        m.put(b);
        b.flip();
        assertEquals(new PortMtu(OptionalInt.of(mtu), "", OptionalInt.of(net)), PortMtu.get(b));
      }
    }
  }

  @Test
  void unknownAndOddFiguresAreZerosAndZerosAreUnknown() {
    assertArrayEquals(new byte[3], bytes(PortMtu.UNKNOWN));
    // Not an IB MTU: unknown rather than a wrong figure; an interface MTU too large is capped.
    assertArrayEquals(
        new byte[] {0, (byte) 0xff, (byte) 0xff},
        bytes(new PortMtu(OptionalInt.of(1500), "x", OptionalInt.of(70_000))));
    assertEquals(PortMtu.UNKNOWN, PortMtu.get(ByteBuffer.wrap(new byte[3])));
    assertEquals(PortMtu.UNKNOWN, PortMtu.get(ByteBuffer.wrap(new byte[] {9, 0, 0})));
    assertEquals(OptionalInt.of(4096), PortMtu.get(ByteBuffer.wrap(new byte[] {5, 0, 0})).active());
  }

  /** The WELCOME keeps its first five bytes, all an older client reads. */
  @Test
  void aWelcomeStartsAsItAlwaysDid() {
    byte[] w =
        VerbsAuthWire.welcome(
            VerbsAuthWire.OK, new PortMtu(OptionalInt.of(4096), "eth0", OptionalInt.of(4200)));
    assertArrayEquals(new byte[] {0x4D, 0x57, 0x56, 0x31, 0, 5, 0x10, 0x68}, w);
    VerbsAuthWire.Welcome back = VerbsAuthWire.welcome(w);
    assertEquals(VerbsAuthWire.OK, back.status());
    assertEquals(OptionalInt.of(4096), back.mtu().active());
    assertEquals(OptionalInt.of(4200), back.mtu().netdevMtu());
    w[0] = 0;
    assertEquals(null, VerbsAuthWire.welcome(w));
  }

  @Test
  void aConnectionIsRefusedOnlyWhenBothMtusAreKnownAndOursIsLarger() {
    PortMtu a = new PortMtu(OptionalInt.of(4096), "eth0", OptionalInt.of(4200));
    PortMtu b = new PortMtu(OptionalInt.of(1024), "", OptionalInt.of(1500));
    FabricDiagnosis.Finding f = a.refusal("rxe0", 1, b);
    assertEquals(FabricDiagnosis.Cause.MTU_MISMATCH, f.cause());
    assertTrue(
        f.message()
            .contains(
                "rxe0 port 1 has active RDMA MTU 4096 (eth0 MTU 4200), the peer's 1024 (its interface's MTU 1500)"),
        f.message());
    assertFalse(b.refusal("rxe0", 1, a).found(), "the smaller side connecting works");
    assertFalse(a.refusal("rxe0", 1, PortMtu.UNKNOWN).found(), "an older peer: nothing known");
    assertFalse(PortMtu.UNKNOWN.refusal("rxe0", 1, b).found());
    assertFalse(a.refusal("rxe0", 1, a).found());
  }

  private static byte[] bytes(PortMtu m) {
    ByteBuffer b = ByteBuffer.allocate(PortMtu.WIRE_SIZE);
    m.put(b);
    return b.array();
  }

  @Test
  void theOpenHandshakeMayTakeHalfOfWhatIsLeftOfTheConnectTimeout() {
    long second = 1_000_000_000L;
    long now = 5 * second;
    assertEquals(now + 10 * second, ConnectHandshake.openHandshakeBound(now, now + 20 * second));
    assertEquals(now + 2 * second, ConnectHandshake.openHandshakeBound(now, now + 3 * second));
    assertEquals(now + second, ConnectHandshake.openHandshakeBound(now, now + second));
  }
}
