package io.memwire.shuffle.service;

import static io.memwire.shuffle.service.ServiceFixture.readPartition;
import static io.memwire.shuffle.service.ServiceFixture.token;
import static io.memwire.shuffle.service.ServiceFixture.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service as a process with recovery on, stopped the hard way (SIGKILL) and the graceful way
 * (SIGTERM), then started again: the outputs of the first run are served again, same bytes under
 * new keys, after their executor's files are gone; with the store deleted in between they are not
 * (a refusal, so Spark reruns the map stage), and the loss is counted.
 */
class RecoveryProcessTest {
  private static final String APP = "app-process";

  @TempDir Path root;
  private ServerSocket driver;
  private TransferNode reader;
  private Process service;

  @BeforeEach
  void start() throws IOException {
    driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    reader = ServiceFixture.reader();
  }

  @AfterEach
  void stop() throws IOException {
    if (service != null) {
      service.destroyForcibly();
    }
    driver.close();
    reader.close();
  }

  private Path socket() {
    return root.resolve("s/service.sock");
  }

  private void startService() throws Exception {
    service =
        new ProcessBuilder(
                ServiceProcess.command(
                    true,
                    List.of(
                        "socket=" + socket(),
                        "dir=" + root.resolve("outputs"),
                        "recoveryPath=" + root.resolve("recovery"),
                        "transfer.provider=tcp",
                        "transfer.bindAddress=127.0.0.1")))
            .redirectErrorStream(true)
            .start();
    ServiceProcess.await(ServiceProcess.follow(service), "memwire shuffle service ready: ");
  }

  private void stopService(Consumer<Process> how) throws InterruptedException {
    how.accept(service);
    assertTrue(service.waitFor(60, TimeUnit.SECONDS), "the service exits");
  }

  /** Publishes one output, reads it, stops the service {@code how}; its executor's files go. */
  private ServiceFixture.Output firstRun(Consumer<Process> how) throws Exception {
    startService();
    ServiceFixture.Output o = write(root.resolve("exec"), 3, 30, 6, 5);
    try (ServiceClient c =
        ServiceFixture.client(socket(), APP, "1", token(3), driver.getLocalPort())) {
      DirectoryPointer p = c.publish(3, 0, 30, o.index(), o.data());
      assertArrayEquals(o.partitions()[4], readPartition(reader, p, 0, 4));
    }
    stopService(how);
    Files.delete(o.index());
    Files.delete(o.data());
    return o;
  }

  private ServiceProtocol.In republish(ServiceFixture.Output o) throws IOException {
    try (ServiceFixture.Raw c =
        new ServiceFixture.Raw(socket()).register(APP, "1", token(3), driver.getLocalPort())) {
      return c.publish(3, 0, 30, o.index().toString(), o.data().toString());
    }
  }

  private Map<String, Long> stats() throws IOException {
    return ServiceClient.stats(socket(), Duration.ofSeconds(10));
  }

  private void servedAgainAfter(Consumer<Process> how) throws Exception {
    ServiceFixture.Output o = firstRun(how);
    startService();
    assertEquals(1L, stats().get("outputsRecovered"), stats().toString());
    DirectoryPointer p = ServiceFixture.pointer(republish(o));
    long servedBefore = stats().get("node.servedReads");
    for (int part = 0; part < 6; part++) {
      assertArrayEquals(
          o.partitions()[part], readPartition(reader, p, 0, part), "partition " + part);
    }
    assertTrue(stats().get("node.servedReads") > servedBefore, "read one-sided from the service");
  }

  @Test
  void sigkillWhileServingThenRestartServesTheSameBytes() throws Exception {
    servedAgainAfter(Process::destroyForcibly);
  }

  @Test
  void sigtermThenRestartServesTheSameBytes() throws Exception {
    servedAgainAfter(Process::destroy);
  }

  @Test
  void withoutTheRocksDbJarTheStartFailsNamingTheKey() throws Exception {
    Process p =
        new ProcessBuilder(
                ServiceProcess.command(
                    false,
                    List.of(
                        "socket=" + socket(),
                        "dir=" + root.resolve("outputs"),
                        "recoveryPath=" + root.resolve("recovery"),
                        "transfer.provider=tcp")))
            .redirectErrorStream(true)
            .start();
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      assertEquals(2, p.exitValue(), out);
      assertTrue(out.contains(ServiceSettings.PREFIX + "recoveryPath"), out);
      assertTrue(out.contains("RocksDB"), out);
    } finally {
      p.destroyForcibly();
    }
  }

  @Test
  void withTheStoreDeletedBetweenStopAndStartNothingIsServedAndTheLossCounted() throws Exception {
    ServiceFixture.Output o = firstRun(Process::destroyForcibly);
    TrustedPaths.deleteTree(root.resolve("recovery"));
    startService();
    assertEquals(1L, stats().get("recoveryStoreLost"));
    String e = ServiceFixture.error(republish(o));
    assertTrue(e.startsWith(ServiceProtocol.E_BAD_OUTPUT + ":"), e);
    assertThrows(AssertionError.class, () -> ServiceFixture.pointer(republish(o)));
  }
}
