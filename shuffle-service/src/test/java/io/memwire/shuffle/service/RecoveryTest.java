package io.memwire.shuffle.service;

import static io.memwire.shuffle.service.ServiceFixture.client;
import static io.memwire.shuffle.service.ServiceFixture.readPartition;
import static io.memwire.shuffle.service.ServiceFixture.token;
import static io.memwire.shuffle.service.ServiceFixture.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceException;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Recovery in one JVM: a service stopped with recovery on keeps its outputs, and the next one takes
 * back exactly those whose files are unchanged (new keys, same bytes), drops the others (a refusal,
 * never other bytes), starts empty with a lost or corrupt store, and is unready meanwhile.
 */
class RecoveryTest {
  private static final String APP = "app-recovery";

  @TempDir Path root;
  private ServerSocket driver;
  private TransferNode reader;
  private ShuffleService service;

  @BeforeEach
  void start() throws IOException {
    driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    reader = ServiceFixture.reader();
  }

  @AfterEach
  void stop() throws IOException {
    if (service != null) {
      service.close();
    }
    driver.close();
    reader.close();
  }

  private Path store() {
    return root.resolve("recovery");
  }

  private ShuffleService startService(String... extra) throws IOException {
    return startService(s -> {}, extra);
  }

  private ShuffleService startService(Consumer<ShuffleService> whileRecovering, String... extra)
      throws IOException {
    List<String> all =
        new ArrayList<>(List.of(ServiceSettings.PREFIX + "recoveryPath", store().toString()));
    all.addAll(List.of(extra));
    service =
        ShuffleService.start(
            ServiceConfig.fromProperties(ServiceFixture.conf(root, all.toArray(String[]::new))),
            whileRecovering);
    return service;
  }

  private ServiceClient executor(int tokenSeed) throws IOException {
    return client(service.socket(), APP, "1", token(tokenSeed), driver.getLocalPort());
  }

  /** A connection that sends paths as given (the executor's files may be gone). */
  private ServiceFixture.Raw raw(int tokenSeed) throws IOException {
    return new ServiceFixture.Raw(service.socket())
        .register(APP, "1", token(tokenSeed), driver.getLocalPort());
  }

  /** Two outputs published by an executor whose files are then gone (the executor left). */
  private record Published(
      ServiceFixture.Output a, DirectoryPointer pa, ServiceFixture.Output b, DirectoryPointer pb) {}

  private Published publishTwoAndStop() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("exec"), 0, 10, 5, 1);
    ServiceFixture.Output b = write(root.resolve("exec"), 0, 11, 4, 2);
    DirectoryPointer pa;
    DirectoryPointer pb;
    try (ServiceClient c = executor(7)) {
      pa = c.publish(0, 0, 10, a.index(), a.data());
      pb = c.publish(0, 1, 11, b.index(), b.data());
    }
    assertArrayEquals(a.partitions()[1], readPartition(reader, pa, 0, 1));
    service.close();
    Files.delete(a.index());
    Files.delete(a.data());
    Files.delete(b.index());
    Files.delete(b.data());
    return new Published(a, pa, b, pb);
  }

  private Path linkOf(String suffix) throws IOException {
    try (Stream<Path> s = Files.walk(root.resolve("outputs"))) {
      return s.filter(p -> p.getFileName().toString().startsWith("shuffle_0_11_0-"))
          .filter(p -> p.getFileName().toString().endsWith(suffix))
          .findFirst()
          .orElseThrow();
    }
  }

  @Test
  void aRestartedServiceServesTheSameBytesUnderNewKeys() throws Exception {
    Published p = publishTwoAndStop();
    startService();
    Map<String, Long> stats = service.stats();
    assertEquals(2L, stats.get("outputsRecovered"), stats.toString());
    assertEquals(0L, stats.get("recoveryStoreLost"));
    try (ServiceFixture.Raw c = raw(7)) {
      // The same task attempt again: the recovered output's pointer, although its files are gone.
      DirectoryPointer again =
          ServiceFixture.pointer(c.publish(0, 0, 10, p.a().index().toString(), ""));
      assertNotEquals(p.pa(), again, "new keys after a restart");
      for (int part = 0; part < 5; part++) {
        assertArrayEquals(p.a().partitions()[part], readPartition(reader, again, 0, part));
      }
      DirectoryPointer b =
          ServiceFixture.pointer(c.publish(0, 1, 11, p.b().index().toString(), ""));
      assertArrayEquals(p.b().partitions()[3], readPartition(reader, b, 1, 3));
    }
    // The old pointer's keys are dead: it reads nothing (a fetch failure for Spark).
    assertThrows(Exception.class, () -> readPartition(reader, p.pa(), 0, 1));
  }

  @Test
  void aRecoveredOutputIsPublishedAgainWithItsChecksums() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("exec"), 3, 30, 4, 5);
    long[] sums = {7, -8, 9, 10};
    ByteBuffer file = ByteBuffer.allocate(sums.length * 8);
    for (long v : sums) {
      file.putLong(v);
    }
    Path aSums = root.resolve("exec/0c/shuffle_3_30_0.checksum.ADLER32");
    Files.createDirectories(aSums.getParent());
    Files.write(aSums, file.array());
    try (ServiceClient c = executor(7)) {
      assertTrue(c.publish(3, 0, 30, a.index(), a.data(), aSums).checksums());
    }
    service.close();
    TrustedPaths.deleteTree(root.resolve("exec")); // the executor and its checksum file are gone
    startService();
    assertEquals(1L, service.stats().get("outputsRecovered"));
    try (ServiceFixture.Raw c = raw(7)) {
      DirectoryPointer p = ServiceFixture.pointer(c.publish(3, 0, 30, a.index().toString(), ""));
      assertTrue(p.checksums(), "the recovered shuffle's directory has room for checksums");
      DirectorySlot slot =
          DirectorySlot.read(
              ByteBuffer.wrap(
                  ServiceFixture.read(reader, p.region(), p.slotOffset(0), p.slotReadLength())),
              p.entries(),
              p.checksums());
      assertEquals(new OutputChecksums(ChecksumAlgorithm.ADLER32, sums), slot.checksums());
      assertArrayEquals(a.partitions()[2], readPartition(reader, p, 0, 2));
    }
  }

  @Test
  void aRecoveredWideOutputGetsANewMetadataRegionWithItsChecksums() throws Exception {
    startService();
    int partitions = 1100;
    ServiceFixture.Output a = write(root.resolve("exec"), 4, 40, partitions, 6);
    long[] sums = new long[partitions];
    ByteBuffer file = ByteBuffer.allocate(partitions * 8);
    for (int i = 0; i < partitions; i++) {
      sums[i] = i * 1_000_003L - 17;
      file.putLong(sums[i]);
    }
    Path aSums = root.resolve("exec/0d/shuffle_4_40_0.checksum.CRC32");
    Files.createDirectories(aSums.getParent());
    Files.write(aSums, file.array());
    try (ServiceClient c = executor(8)) {
      DirectoryPointer before = c.publish(4, 0, 40, a.index(), a.data(), aSums);
      assertEquals(0, before.entries());
      assertTrue(before.checksums(), "headers naming metadata regions (layout 2)");
    }
    service.close();
    TrustedPaths.deleteTree(root.resolve("exec"));
    startService();
    assertEquals(1L, service.stats().get("outputsRecovered"));
    try (ServiceFixture.Raw c = raw(8)) {
      DirectoryPointer p = ServiceFixture.pointer(c.publish(4, 0, 40, a.index().toString(), ""));
      assertTrue(p.checksums());
      DirectorySlot slot =
          DirectorySlot.read(
              ByteBuffer.wrap(
                  ServiceFixture.read(reader, p.region(), p.slotOffset(0), p.slotReadLength())),
              p.entries(),
              p.checksums());
      assertEquals(partitions + 1, slot.metadataEntries(), "MWS4 after recovery");
      assertEquals(ChecksumAlgorithm.CRC32, slot.metadataAlgorithm());
      ByteBuffer stored =
          ByteBuffer.wrap(
              ServiceFixture.read(reader, slot.index(), (partitions + 1) * 8L, partitions * 8));
      long[] got = new long[partitions];
      stored.asLongBuffer().get(got);
      assertArrayEquals(sums, got, "the recorded checksums, after the entries");
      assertArrayEquals(a.partitions()[1000], readPartition(reader, p, 0, 1000));
    }
  }

  @Test
  void aChangedFileIsDroppedAndNeverServed() throws Exception {
    Published p = publishTwoAndStop();
    Files.write(linkOf(".data"), new byte[] {1}, StandardOpenOption.APPEND);
    startService();
    Map<String, Long> stats = service.stats();
    assertEquals(1L, stats.get("outputsRecovered"), stats.toString());
    assertEquals(1L, stats.get("recoveryDropped.changed"), stats.toString());
    try (ServiceFixture.Raw c = raw(7)) {
      String e =
          ServiceFixture.error(
              c.publish(0, 1, 11, p.b().index().toString(), p.b().data().toString()));
      assertTrue(e.startsWith(ServiceProtocol.E_BAD_OUTPUT + ":"), e);
    }
    try (Stream<Path> s = Files.walk(root.resolve("outputs"))) {
      assertEquals(
          0, s.filter(f -> f.getFileName().toString().startsWith("shuffle_0_11_")).count());
    }
  }

  @Test
  void aRecoveredApplicationStaysBoundToItsToken() throws Exception {
    publishTwoAndStop();
    startService();
    ServiceException e = assertThrows(ServiceException.class, () -> executor(8).close());
    assertEquals(ServiceProtocol.E_DENIED, e.code(), e.getMessage());
  }

  @Test
  void aDeletedStoreMeansAnEmptyStartCountedAsLost() throws Exception {
    publishTwoAndStop();
    TrustedPaths.deleteTree(store());
    startService();
    Map<String, Long> stats = service.stats();
    assertEquals(1L, stats.get("recoveryStoreLost"), stats.toString());
    assertEquals(0L, stats.get("outputsRecovered"));
    try (Stream<Path> s = Files.walk(root.resolve("outputs"))) {
      assertEquals(0, s.filter(Files::isRegularFile).count(), "the previous run's files deleted");
    }
  }

  @Test
  void aCorruptStoreMeansAnEmptyStartCountedAsLost() throws Exception {
    publishTwoAndStop();
    try (Stream<Path> s = Files.list(store())) {
      for (Path f : s.filter(Files::isRegularFile).toList()) {
        Files.write(f, "not a database".getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }
    }
    startService();
    Map<String, Long> stats = service.stats();
    assertEquals(1L, stats.get("recoveryStoreLost"), stats.toString());
    assertEquals(0L, stats.get("outputsRecovered"));
    try (ServiceClient c = executor(7)) {
      ServiceFixture.Output o = write(root.resolve("exec2"), 1, 20, 3, 3);
      DirectoryPointer p = c.publish(1, 0, 20, o.index(), o.data());
      assertArrayEquals(o.partitions()[0], readPartition(reader, p, 0, 0), "serves again");
    }
  }

  @Test
  void healthIsUnreadyWhileRecoveringThenReady() throws Exception {
    publishTwoAndStop();
    HttpClient http = HttpClient.newHttpClient();
    List<Integer> duringRecovery = new ArrayList<>();
    Consumer<ShuffleService> whileRecovering =
        s -> {
          try {
            duringRecovery.add(status(http, s.httpPort(), "/health/ready"));
            duringRecovery.add(status(http, s.httpPort(), "/health"));
          } catch (Exception e) {
            throw new AssertionError(e);
          }
        };
    startService(
        whileRecovering,
        ServiceSettings.PREFIX + "http.port",
        "0",
        ServiceSettings.PREFIX + "http.host",
        "127.0.0.1");
    assertEquals(List.of(503, 200), duringRecovery, "unready, live while recovering");
    assertEquals(200, status(http, service.httpPort(), "/health/ready"));
    String metrics =
        http.send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + service.httpPort() + "/metrics"))
                    .build(),
                HttpResponse.BodyHandlers.ofString())
            .body();
    assertTrue(metrics.contains("memwire_shuffle_service_outputs_recovered_total 2.0"), metrics);
    assertTrue(metrics.contains("memwire_shuffle_service_recovery_store_lost_total 0.0"), metrics);
  }

  private static int status(HttpClient http, int port, String path) throws Exception {
    return http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
            HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  @Test
  void theStorePathMustBePrivateAndOutsideTheOutputDirectory() throws Exception {
    String key = ServiceSettings.PREFIX + "recoveryPath";
    TransferConfigException inside =
        assertThrows(
            TransferConfigException.class,
            () ->
                ServiceConfig.fromProperties(
                    ServiceFixture.conf(root, key, root.resolve("outputs/rec").toString())));
    assertTrue(inside.getMessage().contains(key), inside.getMessage());
    Path shared = Files.createDirectories(root.resolve("shared"));
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
    IOException open =
        assertThrows(
            IOException.class,
            () ->
                ShuffleService.start(
                    ServiceConfig.fromProperties(
                        ServiceFixture.conf(root, key, shared.resolve("store").toString()))));
    assertTrue(open.getMessage().contains(key), open.getMessage());
    startService();
    assertEquals(
        "rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(store())));
  }
}
