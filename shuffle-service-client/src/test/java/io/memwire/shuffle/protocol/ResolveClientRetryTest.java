package io.memwire.shuffle.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A resolve port where nothing listens: connects are retried with a capped back-off until the
 * timeout, then the reader gets an error naming the service and the timeout.
 */
class ResolveClientRetryTest {
  @Test
  void pausesDoubleFromTheFirstUpToTheCap() {
    List<Long> pauses = new ArrayList<>();
    long p = 0;
    for (int i = 0; i < 8; i++) {
      p = ResolveClient.pauseAfter(p);
      pauses.add(p);
    }
    assertEquals(List.of(100L, 200L, 400L, 800L, 1600L, 2000L, 2000L, 2000L), pauses);
  }

  @Test
  void nothingListeningFailsAtTheTimeoutNamingIt() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort(); // closed below: connects to it are refused
    }
    InetSocketAddress at = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    DirectoryPointer old =
        new DirectoryPointer(
            0, RemoteRegion.of(new RegionDescriptor(ProviderKind.TCP, at, 1, 4096, 1 << 16)));
    long start = System.nanoTime();
    IOException e =
        assertThrows(
            IOException.class,
            () -> ResolveClient.resolve(at, "app", new byte[32], 0, old, Duration.ofMillis(350)));
    long tookMillis = (System.nanoTime() - start) / 1_000_000;
    assertTrue(e.getMessage().contains("no answer from the shuffle service at"), e.getMessage());
    assertTrue(e.getMessage().contains("PT0.35S"), e.getMessage());
    assertTrue(tookMillis >= 300, "tried until the timeout: " + tookMillis + " ms");
    assertTrue(tookMillis < 10_000, "gave up after the timeout: " + tookMillis + " ms");
  }
}
