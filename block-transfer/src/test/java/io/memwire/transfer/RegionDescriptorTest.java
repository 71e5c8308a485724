package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

class RegionDescriptorTest {
  @Test
  void roundTripsInAFixedSizeForIpv4AndIpv6() throws Exception {
    for (String ip : new String[] {"10.1.2.3", "fe80::1"}) {
      RegionDescriptor d =
          new RegionDescriptor(
              ProviderKind.VERBS,
              new InetSocketAddress(InetAddress.getByName(ip), 4791),
              0xdeadbeefL,
              0x7f00_1234_5000L,
              3L << 30);
      byte[] b = d.toBytes();
      assertEquals(RegionDescriptor.ENCODED_SIZE, b.length);
      assertEquals(1, b[0], "version byte");
      assertEquals(d, RegionDescriptor.fromBytes(b));
    }
  }

  @Test
  void remoteRegionsRoundTripAndLocateSegments() throws Exception {
    InetSocketAddress n = new InetSocketAddress(InetAddress.getLoopbackAddress(), 1);
    RemoteRegion r =
        new RemoteRegion(
            List.of(
                new RegionDescriptor(ProviderKind.TCP, n, 1, 1000, 100),
                new RegionDescriptor(ProviderKind.TCP, n, 2, 9000, 50)));
    assertEquals(150, r.length());
    assertEquals(0, r.segmentIndex(99));
    assertEquals(1, r.segmentIndex(100));
    assertEquals(r, RemoteRegion.fromBytes(r.toBytes()));
    assertEquals(2 + 2 * RegionDescriptor.ENCODED_SIZE, r.toBytes().length);
  }

  @Test
  void malformedEncodingsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> RegionDescriptor.fromBytes(new byte[10]));
    byte[] wrongVersion = new byte[RegionDescriptor.ENCODED_SIZE];
    wrongVersion[0] = 9;
    assertTrue(
        assertThrows(
                IllegalArgumentException.class,
                () -> RegionDescriptor.decode(ByteBuffer.wrap(wrongVersion)))
            .getMessage()
            .contains("version"));
  }

  @Test
  void toStringAbbreviatesTheKey() throws Exception {
    RegionDescriptor d =
        new RegionDescriptor(
            ProviderKind.TCP,
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 5),
            0x1234_5678_9abc_def0L,
            16,
            32);
    assertTrue(d.toString().contains("tcp://127.0.0.1:5"), d.toString());
    assertTrue(!d.toString().contains("9abcdef0"), d.toString());
  }
}
