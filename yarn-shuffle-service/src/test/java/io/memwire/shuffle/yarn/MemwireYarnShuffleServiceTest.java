package io.memwire.shuffle.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.service.ServiceSettings;
import io.memwire.shuffle.service.ShuffleService;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.testing.Await;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.service.Service;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The aux service driven the way a NodeManager drives it (Hadoop's service lifecycle, then YARN's
 * application events), with executors registering over the real Unix socket.
 */
class MemwireYarnShuffleServiceTest {
  private static final long CLUSTER_TIMESTAMP = 1_700_000_000_000L;
  private static final Duration DEADLINE = Duration.ofSeconds(15);

  /** Application directories are named {@code <id>@<user>}: ids are per user. */
  private static final String USER = System.getProperty("user.name");

  @TempDir Path root;
  private ServerSocket driver;
  private MemwireYarnShuffleService aux;

  @BeforeEach
  void startDriver() throws IOException {
    // Stands in for the Spark driver's RPC port, which the service probes for liveness.
    driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
  }

  @AfterEach
  void stopEverything() throws Exception {
    if (aux != null) {
      aux.stop();
    }
    driver.close();
    await(
        () ->
            Thread.getAllStackTraces().keySet().stream()
                .noneMatch(
                    t ->
                        t.getName().startsWith("memwire-shuffle-service-")
                            && !t.getName().endsWith("-timer")),
        "the service's threads ended");
  }

  /** The NodeManager's configuration: yarn-site.xml values, with the layout XML gives them. */
  private Configuration nodeManagerConf() {
    Configuration conf = new Configuration(false);
    conf.set(
        "yarn.nodemanager.aux-services.memwire_shuffle.class",
        MemwireYarnShuffleService.class.getName());
    conf.set(ServiceSettings.PREFIX + "socket", "\n    " + socket() + "\n  ");
    conf.set(ServiceSettings.PREFIX + "dir", root.resolve("outputs").toString());
    conf.set(ServiceSettings.TRANSFER_PREFIX + "provider", "tcp");
    conf.set(ServiceSettings.TRANSFER_PREFIX + "bindAddress", "127.0.0.1");
    return conf;
  }

  private Path socket() {
    return root.resolve("run/memwire.sock");
  }

  private ServiceClient executor(String attempt, String executorId, int tokenSeed)
      throws IOException {
    byte[] token = new byte[32];
    new Random(tokenSeed).nextBytes(token);
    return ServiceClient.connect(
        socket(),
        new ServiceClient.Registration(
            attempt, executorId, token, "127.0.0.1", driver.getLocalPort()),
        Duration.ofSeconds(10));
  }

  @Test
  void stopApplicationEndsEveryAttemptOfThatApplicationOnly() throws Exception {
    aux = new MemwireYarnShuffleService();
    assertEquals(MemwireYarnShuffleService.SERVICE_NAME, aux.getName());
    aux.init(nodeManagerConf());
    aux.start();
    assertEquals(Service.STATE.STARTED, aux.getServiceState());
    ShuffleService service = aux.shuffleService();
    assertNotNull(service);
    assertEquals(socket(), service.socket(), "the socket value was trimmed");
    assertEquals(0, aux.getMetaData().remaining());

    ApplicationId stopped = ApplicationId.newInstance(CLUSTER_TIMESTAMP, 1);
    ApplicationId running = ApplicationId.newInstance(CLUSTER_TIMESTAMP, 2);
    Path execDir = root.resolve("usercache/appcache/exec-1");
    MapOutput first = MapOutput.write(execDir, 0, 11, 6, 1);
    MapOutput retried = MapOutput.write(execDir, 0, 12, 6, 2);
    MapOutput other = MapOutput.write(execDir, 1, 13, 6, 3);
    long regionsBefore = service.node().stats().registeredRegions();
    // Spark registers attempts as <YARN application id>_<attempt id>.
    try (ServiceClient a1 = executor(stopped + "_1", "1", 1);
        ServiceClient a2 = executor(stopped + "_2", "1", 2);
        ServiceClient b1 = executor(running + "_1", "1", 3)) {
      a1.publish(0, 0, 11, first.index(), first.data());
      a2.publish(0, 1, 12, retried.index(), retried.data());
      b1.publish(1, 0, 13, other.index(), other.data());
    }
    assertEquals(3L, service.stats().get("outputsHeld"));
    assertEquals(2, filesUnder(root.resolve("outputs/apps/" + stopped + "_1@" + USER)));
    assertEquals(2, filesUnder(root.resolve("outputs/apps/" + stopped + "_2@" + USER)));

    aux.stopApplication(new ApplicationTerminationContext(stopped));

    await(() -> service.stats().get("outputsHeld") == 1L, "only the running application held");
    assertEquals(2L, service.stats().get("applicationsEnded"));
    assertFalse(
        Files.exists(root.resolve("outputs/apps/" + stopped + "_1@" + USER)), "attempt 1 deleted");
    assertFalse(
        Files.exists(root.resolve("outputs/apps/" + stopped + "_2@" + USER)), "attempt 2 deleted");
    assertEquals(2, filesUnder(root.resolve("outputs/apps/" + running + "_1@" + USER)));
    await(
        () -> service.node().stats().registeredRegions() == regionsBefore + 3,
        "the stopped application's regions deregistered (the other's index, data, chunk left)");

    // An application that never used Memwire on this node: nothing to end, nothing fails.
    aux.stopApplication(
        new ApplicationTerminationContext(ApplicationId.newInstance(CLUSTER_TIMESTAMP, 3)));
    assertEquals(1L, service.stats().get("outputsHeld"));

    aux.stop();
    assertEquals(Service.STATE.STOPPED, aux.getServiceState());
    assertFalse(Files.exists(socket()), "socket removed");
    assertEquals(0L, service.stats().get("outputsHeld"));
    assertEquals(0, filesUnder(root.resolve("outputs/apps")), "every file deleted at stop");
    assertEquals(0, service.node().stats().registeredRegions());
    assertEquals(
        0, service.node().stats().memoryBytes(), service.node().memory().toVerboseString());
  }

  @Test
  void withNodeManagerRecoveryAStopKeepsTheOutputsAndTheRestartServesThem() throws Exception {
    org.apache.hadoop.fs.Path recovery =
        new org.apache.hadoop.fs.Path(
            Files.createDirectories(root.resolve("nm-recovery/" + aux().getName())).toUri());
    aux.setRecoveryPath(recovery);
    aux.init(nodeManagerConf());
    aux.start();
    String kept = ApplicationId.newInstance(CLUSTER_TIMESTAMP, 5) + "_1";
    ApplicationId stopped = ApplicationId.newInstance(CLUSTER_TIMESTAMP, 6);
    MapOutput a = MapOutput.write(root.resolve("exec-5"), 5, 51, 4, 6);
    MapOutput b = MapOutput.write(root.resolve("exec-6"), 6, 61, 4, 7);
    try (ServiceClient c1 = executor(kept, "1", 6);
        ServiceClient c2 = executor(stopped + "_1", "1", 7)) {
      c1.publish(5, 0, 51, a.index(), a.data());
      c2.publish(6, 0, 61, b.index(), b.data());
    }
    aux.stopApplication(new ApplicationTerminationContext(stopped)); // gone for good
    aux.stop();
    assertEquals(2, filesUnder(root.resolve("outputs/apps")), "the kept output's files stay");
    assertTrue(
        Files.exists(Path.of(recovery.toUri().getPath()).resolve("CURRENT")),
        "the store is in the NodeManager's recovery path");

    aux().setRecoveryPath(recovery); // the restarted NodeManager
    aux.init(nodeManagerConf());
    aux.start();
    Map<String, Long> stats = aux.shuffleService().stats();
    assertEquals(1L, stats.get("outputsRecovered"), stats.toString());
    assertEquals(1L, stats.get("outputsHeld"));
    assertEquals(0L, stats.get("recoveryStoreLost"));
    assertEquals(2, filesUnder(root.resolve("outputs/apps/" + kept + "@" + USER)));
  }

  private MemwireYarnShuffleService aux() {
    aux = new MemwireYarnShuffleService();
    return aux;
  }

  @Test
  void aSocketDirectoryOthersMayWriteToFailsTheStartNamingTheKey() throws Exception {
    // The NodeManager runs the same start-up checks as the stand-alone service.
    Path open = Files.createDirectories(socket().getParent());
    Files.setPosixFilePermissions(
        open, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
    aux = new MemwireYarnShuffleService();
    aux.init(nodeManagerConf());
    RuntimeException e = assertThrows(RuntimeException.class, () -> aux.start());
    String all = e + " " + e.getCause();
    assertTrue(
        all.contains("other users may write") && all.contains(ServiceSettings.PREFIX + "socket"),
        all);
    assertFalse(Files.exists(socket()), "nothing listened");
  }

  @Test
  void anUnknownKeyFailsInitNamingIt() {
    Configuration conf = nodeManagerConf();
    String typo = ServiceSettings.PREFIX + "appTimout";
    conf.set(typo, "30s");
    aux = new MemwireYarnShuffleService();
    RuntimeException e = assertThrows(RuntimeException.class, () -> aux.init(conf));
    assertTrue(e.getMessage().contains(typo), e.getMessage());
    assertTrue(e instanceof TransferConfigException, e.toString());
    assertEquals(typo, ((TransferConfigException) e).key());
    assertEquals(Service.STATE.STOPPED, aux.getServiceState(), "a failed init stops the service");
    assertFalse(Files.exists(socket()), "nothing listened");
  }

  @Test
  void theHttpEndpointIsRefusedNamingItsKey() {
    Configuration conf = nodeManagerConf();
    String key = ServiceSettings.PREFIX + "http.port";
    conf.set(key, "9464");
    aux = new MemwireYarnShuffleService();
    RuntimeException e = assertThrows(RuntimeException.class, () -> aux.init(conf));
    assertTrue(e instanceof TransferConfigException, e.toString());
    assertEquals(key, ((TransferConfigException) e).key());
    assertTrue(e.getMessage().contains("YARN"), e.getMessage());
    assertFalse(Files.exists(socket()), "nothing listened");
  }

  @Test
  void aBadTransferValueFailsInitNamingIt() {
    Configuration conf = nodeManagerConf();
    String key = ServiceSettings.TRANSFER_PREFIX + "port";
    conf.set(key, "not-a-port");
    aux = new MemwireYarnShuffleService();
    RuntimeException e = assertThrows(RuntimeException.class, () -> aux.init(conf));
    assertTrue(e.getMessage().contains(key), e.getMessage());
    assertFalse(Files.exists(socket()), "nothing listened");
  }

  @Test
  void aSecondServiceOnTheSameSocketFailsToStartAndLeavesTheFirstServing() throws Exception {
    aux = new MemwireYarnShuffleService();
    aux.init(nodeManagerConf());
    aux.start();
    MemwireYarnShuffleService second = new MemwireYarnShuffleService();
    second.init(nodeManagerConf());
    RuntimeException e = assertThrows(RuntimeException.class, second::start);
    assertTrue(String.valueOf(e.getMessage()).contains(socket().toString()), e.toString());
    assertEquals(Service.STATE.STOPPED, second.getServiceState());
    assertTrue(Files.exists(socket()), "the first service's socket stays");
    MapOutput out = MapOutput.write(root.resolve("exec-2"), 2, 21, 3, 4);
    String app = ApplicationId.newInstance(CLUSTER_TIMESTAMP, 4) + "_1";
    try (ServiceClient c = executor(app, "2", 5)) {
      c.publish(2, 0, 21, out.index(), out.data());
    }
    assertEquals(1L, aux.shuffleService().stats().get("outputsHeld"));
  }

  private static long filesUnder(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return 0;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).count();
    }
  }

  private static void await(BooleanSupplier condition, String what) {
    Await.until(what, DEADLINE, condition);
  }

  /** One map output written as Spark's sort shuffle writes it: shuffle_S_M_0.index and .data. */
  private record MapOutput(Path index, Path data) {
    static MapOutput write(Path dir, int shuffleId, long mapId, int partitions, long seed)
        throws IOException {
      Files.createDirectories(dir);
      Random r = new Random(seed);
      ByteBuffer index = ByteBuffer.allocate(8 * (partitions + 1)).order(ByteOrder.BIG_ENDIAN);
      byte[] data = new byte[partitions * 500];
      long offset = 0;
      index.putLong(offset);
      for (int p = 0; p < partitions; p++) {
        // Every third partition empty, as skewed keys leave some.
        int length = p % 3 == 2 ? 0 : 1 + r.nextInt(500);
        offset += length;
        index.putLong(offset);
      }
      r.nextBytes(data);
      String base = "shuffle_" + shuffleId + "_" + mapId + "_0";
      Path i = dir.resolve(base + ".index");
      Path d = dir.resolve(base + ".data");
      Files.write(i, index.array());
      Files.write(d, java.util.Arrays.copyOf(data, (int) offset));
      return new MapOutput(i, d);
    }
  }
}
