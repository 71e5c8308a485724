package io.memwire.shuffle.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The layout byte of an OK answer naming a directory chunk: each layout a pointer can have maps to
 * its flags and back; flags a client does not know, or that contradict the entries, are refused.
 */
class LayoutFlagsTest {
  private static final RemoteRegion REGION =
      new RemoteRegion(
          List.of(
              new RegionDescriptor(
                  io.memwire.transfer.ProviderKind.TCP,
                  new InetSocketAddress("127.0.0.1", 7000),
                  42L,
                  4096L,
                  256L * 1024)));

  @Test
  void everyPointerLayoutRoundTripsThroughItsFlags() throws IOException {
    for (DirectoryPointer p :
        List.of(
            new DirectoryPointer(1, REGION),
            new DirectoryPointer(1, 201, REGION),
            new DirectoryPointer(1, 201, true, REGION),
            new DirectoryPointer(1, 0, true, REGION))) {
      int layout = ServiceProtocol.layout(p);
      assertEquals(p, ServiceClient.pointer(1, p.entries(), layout, REGION), p.toString());
    }
    assertEquals(
        ServiceProtocol.LAYOUT_METADATA,
        ServiceProtocol.layout(new DirectoryPointer(1, 0, true, REGION)));
    assertEquals(
        ServiceProtocol.LAYOUT_CHECKSUMS,
        ServiceProtocol.layout(new DirectoryPointer(1, 201, true, REGION)));
  }

  @Test
  void unknownOrContradictoryFlagsAreRefused() {
    assertThrows(IOException.class, () -> ServiceClient.pointer(1, 0, 4, REGION));
    assertThrows(IOException.class, () -> ServiceClient.pointer(1, 0, 3, REGION));
    assertThrows(
        IOException.class,
        () -> ServiceClient.pointer(1, 201, ServiceProtocol.LAYOUT_METADATA, REGION),
        "metadata regions only in a chunk of headers");
    assertThrows(
        IOException.class,
        () -> ServiceClient.pointer(1, 0, ServiceProtocol.LAYOUT_CHECKSUMS, REGION),
        "inline checksums need inline entries");
  }

  @Test
  void aMetadataPointerIsNotTheOldHeadersOnlyOne() throws IOException {
    DirectoryPointer meta = ServiceClient.pointer(1, 0, ServiceProtocol.LAYOUT_METADATA, REGION);
    assertTrue(meta.checksums());
    DirectoryPointer plain = ServiceClient.pointer(1, 0, 0, REGION);
    assertFalse(plain.checksums());
    assertFalse(meta.equals(plain));
  }
}
