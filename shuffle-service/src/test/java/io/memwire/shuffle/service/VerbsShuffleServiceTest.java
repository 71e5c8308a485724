package io.memwire.shuffle.service;

import static io.memwire.shuffle.service.ServiceFixture.readPartition;
import static io.memwire.shuffle.service.ServiceFixture.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceException;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.verbs.VerbsProbe;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@link ShuffleServiceTest} over the verbs provider: the service registers the outputs it owns as
 * verbs regions (file mappings) and reducers read them with RDMA Reads. Runs where an RDMA device
 * and libdisni are present (the Soft-RoCE guest: {@code -Dmemwire.test.verbs.bind=$SOFTROCE_IP});
 * elsewhere every test is skipped with the probe's reason. Adds {@link ResolveTest}'s restart case
 * over verbs: after a restart the old rkeys are dead and RESOLVE leads to the same bytes.
 */
class VerbsShuffleServiceTest extends ShuffleServiceTest {
  private static TransferConfigBuilder verbs() {
    TransferConfigBuilder b =
        TransferConfig.builder()
            .provider(ProviderKind.VERBS)
            .registrationBudget(256L << 20)
            .poolMaxBytes(32 << 20);
    String bind = System.getProperty("memwire.test.verbs.bind");
    if (bind != null && !bind.isBlank()) {
      b.bindAddress(bind);
    }
    return b;
  }

  private static void requireVerbs() {
    Optional<String> why = VerbsProbe.unavailableReason(verbs().build());
    Assumptions.assumeTrue(why.isEmpty(), () -> "verbs unavailable: " + why.get());
  }

  @Override
  protected String[] providerConf() {
    String bind = System.getProperty("memwire.test.verbs.bind", "");
    return bind.isBlank()
        ? new String[] {ServiceSettings.TRANSFER_PREFIX + "provider", "verbs"}
        : new String[] {
          ServiceSettings.TRANSFER_PREFIX + "provider",
          "verbs",
          ServiceSettings.TRANSFER_PREFIX + "bindAddress",
          bind
        };
  }

  @Override
  protected TransferNode newReader() {
    requireVerbs(); // before anything starts: each test is skipped with the probe's reason
    return TransferNode.start(verbs().build());
  }

  @Test
  void aStalePointerResolvesToTheSameBytesOverVerbsAfterARestart() throws Exception {
    requireVerbs();
    try (ServerSocket driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        TransferNode reader = newReader();
        RestartingService restarting =
            new RestartingService(root, providerConf(), driver.getLocalPort())) {
      restarting.start();
      ServiceFixture.Output a = write(root.resolve("exec"), 0, 10, 5, 1);
      ServiceFixture.Output b = write(root.resolve("exec"), 0, 11, 4, 2);
      DirectoryPointer old;
      try (ServiceClient c = restarting.executor("app-resolve", 7)) {
        old = c.publish(0, 0, 10, a.index(), a.data());
        assertEquals(old, c.publish(0, 1, 11, b.index(), b.data()), "one chunk");
      }
      assertArrayEquals(a.partitions()[0], readPartition(reader, old, 0, 0), "before restart");
      restarting.restart();
      assertThrows(Exception.class, () -> readPartition(reader, old, 0, 1), "old rkeys are dead");
      DirectoryPointer now = restarting.resolve("app-resolve", 7, 0, old);
      assertNotEquals(old, now);
      for (int part = 0; part < 5; part++) {
        assertArrayEquals(a.partitions()[part], readPartition(reader, now, 0, part), "p" + part);
      }
      assertArrayEquals(b.partitions()[3], readPartition(reader, now, 1, 3));
      ServiceException wrong =
          assertThrows(ServiceException.class, () -> restarting.resolve("app-resolve", 8, 0, old));
      assertEquals(ServiceProtocol.E_DENIED, wrong.code());
      assertEquals(1L, restarting.service().stats().get("pointersResolved"));
      assertEquals(1L, restarting.service().stats().get("pointerResolvesRefused"));
    }
  }
}
