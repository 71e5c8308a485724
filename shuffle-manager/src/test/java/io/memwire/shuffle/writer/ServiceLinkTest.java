package io.memwire.shuffle.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.service.ServiceConfig;
import io.memwire.shuffle.service.ServiceSettings;
import io.memwire.shuffle.service.ShuffleService;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An executor that started before its node's service uses the service once it answers. */
class ServiceLinkTest {
  @TempDir Path root;

  @Test
  void aServiceThatStartsLaterIsUsedAfterTheRetryInterval() throws Exception {
    Path socket = root.resolve("s/service.sock");
    try (ServerSocket driver = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
      ServiceClient.Registration reg =
          new ServiceClient.Registration(
              "app-link", "1", new byte[16], "127.0.0.1", driver.getLocalPort());
      try (ServiceLink link =
          new ServiceLink(
              socket,
              reg,
              Duration.ofSeconds(5),
              ServiceClient.defaultServiceUsers(),
              Duration.ofSeconds(2))) {
        assertNull(link.client(), "no service yet");
        assertFalse(link.isConnected());
        try (ShuffleService service =
            ShuffleService.start(
                ServiceConfig.fromProperties(
                    Map.of(
                        ServiceSettings.PREFIX + "socket",
                        socket.toString(),
                        ServiceSettings.PREFIX + "dir",
                        root.resolve("out").toString(),
                        ServiceSettings.TRANSFER_PREFIX + "provider",
                        "tcp",
                        ServiceSettings.TRANSFER_PREFIX + "bindAddress",
                        "127.0.0.1")))) {
          long t0 = System.nanoTime();
          assertNull(link.client(), "not before the retry interval");
          ServiceClient c = null;
          long deadline = t0 + Duration.ofSeconds(10).toNanos();
          while (c == null && System.nanoTime() < deadline) {
            c = link.client();
            Thread.sleep(20);
          }
          assertNotNull(c, "connected once the interval passed");
          assertTrue(link.isConnected());
          assertEquals(1L, service.stats().get("applications"), "registered");
          link.removeShuffle(3); // nothing of shuffle 3: answered, no error
        }
      }
    }
  }
}
