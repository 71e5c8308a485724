package io.memwire.shuffle.service;

import static io.memwire.shuffle.service.ServiceFixture.await;
import static io.memwire.shuffle.service.ServiceFixture.client;
import static io.memwire.shuffle.service.ServiceFixture.readPartition;
import static io.memwire.shuffle.service.ServiceFixture.token;
import static io.memwire.shuffle.service.ServiceFixture.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceException;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.metrics.TransportMetrics;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service end to end in one JVM: executors hand outputs over the real Unix socket, a reader
 * node reads them one-sided over tcp, and every way an output or an application ends returns the
 * service's registered memory and files.
 */
class ShuffleServiceTest {
  // Subclassed by VerbsShuffleServiceTest: the same checks over the verbs provider.
  @TempDir Path root;
  private ServerSocket driver;
  private TransferNode reader;
  private ShuffleService service;

  /** The service's transfer keys (this class: tcp on loopback). */
  protected String[] providerConf() {
    return new String[] {
      ServiceSettings.TRANSFER_PREFIX + "provider", "tcp",
      ServiceSettings.TRANSFER_PREFIX + "bindAddress", "127.0.0.1"
    };
  }

  /** The reducers' node, same provider as the service. */
  protected TransferNode newReader() {
    return ServiceFixture.reader();
  }

  @BeforeEach
  void start() throws IOException {
    driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    reader = newReader();
  }

  @AfterEach
  void stop() throws IOException, InterruptedException {
    if (service != null) {
      service.close();
      assertHygiene(service);
    }
    driver.close();
    if (reader == null) {
      return; // the test was skipped before it started anything
    }
    reader.close();
    assertEquals(0, reader.stats().memoryBytes(), reader.memory().toVerboseString());
    await(
        Duration.ofSeconds(10),
        () ->
            Thread.getAllStackTraces().keySet().stream()
                .noneMatch(
                    t ->
                        t.getName().startsWith("memwire-shuffle-service-")
                            && !t.getName().endsWith("-timer")),
        "service threads ended");
  }

  /** The allocator the service books its outputs' file regions on. */
  static MemoryAllocator outputsAllocator(ShuffleService s) {
    return s.node().memory().children().stream()
        .filter(c -> c.name().equals(ByteQuotas.ALLOCATOR))
        .findFirst()
        .orElseThrow();
  }

  private static void assertHygiene(ShuffleService s) {
    TransferNode n = s.node();
    assertEquals(0, n.stats().memoryBytes(), n.memory().toVerboseString());
    assertTrue(n.memory().leakReports().isEmpty(), n.memory().leakReports().toString());
    assertEquals(0, n.stats().registeredRegions());
    assertFalse(Files.exists(s.socket()), "socket removed");
  }

  private ShuffleService startService(String... extra) throws IOException {
    String[] all =
        Stream.concat(Stream.of(providerConf()), Stream.of(extra)).toArray(String[]::new);
    service = ShuffleService.start(ServiceConfig.fromProperties(ServiceFixture.conf(root, all)));
    return service;
  }

  private ServiceClient executor(String app, String exec, int tokenSeed) throws IOException {
    return client(service.socket(), app, exec, token(tokenSeed), driver.getLocalPort());
  }

  private long filesUnder(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return 0;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).count();
    }
  }

  @Test
  void outputsStayReadableOneSidedAfterTheExecutorDeletedItsFiles() throws Exception {
    startService();
    Path execDir = root.resolve("exec-1");
    ServiceFixture.Output a = write(execDir, 4, 101, 9, 1);
    ServiceFixture.Output b = write(execDir, 4, 102, 9, 2);
    DirectoryPointer pa;
    DirectoryPointer pb;
    try (ServiceClient c = executor("app-1", "1", 7)) {
      pa = c.publish(4, 0, 101, a.index(), a.data());
      pb = c.publish(4, 1, 102, b.index(), b.data());
      assertEquals(2L, c.stats().get("outputsHeld"));
    }
    assertEquals(pa, pb, "outputs of one executor, shuffle and chunk share a pointer");
    // The executor is gone and Spark deleted its blockmgr directories.
    TrustedPaths.deleteTree(execDir);
    for (int p = 0; p < 9; p++) {
      assertArrayEquals(a.partitions()[p], readPartition(reader, pa, 0, p), "map 0 partition " + p);
      assertArrayEquals(b.partitions()[p], readPartition(reader, pb, 1, p), "map 1 partition " + p);
    }
    if (service.node().provider() == io.memwire.transfer.ProviderKind.TCP) {
      assertTrue(service.node().stats().asMap().get("servedReads") > 0, "the responder served");
    }
  }

  /**
   * Close is safe from any thread at once: its body runs once, and every caller returns only once
   * the service is closed (regions deregistered, memory freed), not while another thread is still
   * closing it. The first closer is held in the closing hook until every other caller has either
   * returned or is waiting in close.
   */
  @Test
  void closingFromSeveralThreadsAtOnceClosesOnceAndReturnsClosed() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("exec-1"), 4, 101, 3, 1);
    try (ServiceClient c = executor("app-1", "1", 7)) {
      c.publish(4, 0, 101, a.index(), a.data());
    }
    assertTrue(service.node().stats().registeredRegions() > 0);
    int callers = 4;
    java.util.List<Thread> threads = new java.util.ArrayList<>();
    java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger bodies =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.Map<String, String> seen = new java.util.concurrent.ConcurrentHashMap<>();
    ShuffleService s = service;
    s.whileClosing =
        () -> {
          bodies.incrementAndGet();
          try {
            await(
                Duration.ofSeconds(30),
                () ->
                    threads.stream()
                        .filter(t -> t != Thread.currentThread())
                        .allMatch(
                            t ->
                                t.getState() == Thread.State.WAITING
                                    || t.getState() == Thread.State.TIMED_WAITING
                                    || t.getState() == Thread.State.BLOCKED
                                    || t.getState() == Thread.State.TERMINATED),
                "the other closers returned or wait in close");
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        };
    for (int i = 0; i < callers; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  gate.await();
                  s.close();
                  seen.put(
                      Thread.currentThread().getName(),
                      s.node().stats().registeredRegions()
                          + " regions, "
                          + s.node().stats().memoryBytes()
                          + " bytes, ready "
                          + s.isReady());
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "closer-" + i);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
    gate.countDown();
    for (Thread t : threads) {
      t.join(60_000);
      assertFalse(t.isAlive(), t.getName() + " returned from close");
    }
    assertEquals(1, bodies.get(), "the close body ran once");
    assertEquals(callers, seen.size(), seen.toString());
    seen.forEach((who, what) -> assertEquals("0 regions, 0 bytes, ready false", what, who));
    assertEquals(1L, s.stats().get("applicationsEnded"));
    assertFalse(s.isReady());
  }

  /**
   * Every key the service reports is declared once ({@link ServiceStats}, or the transfer node's
   * {@link io.memwire.transfer.metrics.TransportMetrics} under {@code node.}), every declaration is
   * reported, and every exported metric reads a key that is there: a key renamed on one side only
   * would export 0 forever.
   */
  @Test
  void everyStatIsDeclaredAndEveryExportedMetricReadsOne() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("exec-1"), 4, 101, 3, 1);
    try (ServiceClient c = executor("app-1", "1", 7)) {
      c.publish(4, 0, 101, a.index(), a.data());
      assertThrows(ServiceException.class, () -> c.publish(4, 1, 102, a.data(), a.index()));
    }
    Map<String, Long> stats = service.stats();
    for (String key : stats.keySet()) {
      boolean declared =
          key.startsWith(ShuffleService.NODE_PREFIX)
              ? TransportMetrics.ALL.stream()
                  .anyMatch(m -> m.matches(key.substring(ShuffleService.NODE_PREFIX.length())))
              : ServiceStats.declares(key);
      assertTrue(declared, "not declared: " + key);
    }
    for (io.memwire.transfer.metrics.Metric m : ServiceStats.ALL) {
      assertTrue(stats.keySet().stream().anyMatch(m::matches), "not reported: " + m);
    }
    boolean tcp = service.node().provider() == ProviderKind.TCP;
    for (ServiceMetrics.Metric m : ServiceMetrics.ALL) {
      if (!tcp && TransportMetrics.TCP.contains(m.stat())) {
        // tcp's own counters: another provider does not keep them, and none is exported as 0.
        assertFalse(stats.containsKey(m.key()), m.key() + " reported by " + service.node());
        assertTrue(m.values(stats).isEmpty(), m.exposedName() + " has a sample");
        continue;
      }
      assertTrue(
          m.label() != null || stats.containsKey(m.key()),
          m.exposedName() + " reads " + m.key() + ", not in " + stats.keySet());
      assertFalse(m.values(stats).isEmpty(), m.exposedName());
    }
    assertEquals(1.0, ServiceMetrics.ALL.get(3).values(stats).get(""), "outputs_held");
  }

  @Test
  void removeShuffleDeregistersAndDeletesEveryExecutorsOutputs() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("e1"), 1, 11, 4, 3);
    ServiceFixture.Output b = write(root.resolve("e2"), 1, 12, 4, 4);
    ServiceFixture.Output keep = write(root.resolve("e2"), 2, 13, 4, 5);
    long regionsBefore = service.node().stats().registeredRegions();
    try (ServiceClient e1 = executor("app-2", "1", 8);
        ServiceClient e2 = executor("app-2", "2", 8)) {
      DirectoryPointer p = e1.publish(1, 0, 11, a.index(), a.data());
      e2.publish(1, 1, 12, b.index(), b.data());
      DirectoryPointer kept = e2.publish(2, 0, 13, keep.index(), keep.data());
      assertEquals(6, filesUnder(root.resolve("outputs/apps")));
      long booked = outputsAllocator(service).registeredBytes();
      assertTrue(booked > 0, "the outputs' regions are on the intake's allocator");
      e1.removeShuffle(1);
      long left = outputsAllocator(service).registeredBytes();
      assertTrue(left > 0 && left < booked, "shuffle 1's regions went: " + booked + " -> " + left);
      assertEquals(2, filesUnder(root.resolve("outputs/apps")), "only shuffle 2 is left");
      ExecutionException gone =
          assertThrows(ExecutionException.class, () -> readPartition(reader, p, 0, 0));
      assertTrue(gone.getCause() instanceof RemoteAccessException, gone.getCause().toString());
      assertArrayEquals(keep.partitions()[1], readPartition(reader, kept, 0, 1));
      Map<String, Long> st = e2.stats();
      assertEquals(1L, st.get("outputsHeld"));
      assertEquals(
          regionsBefore + 3,
          service.node().stats().registeredRegions(),
          "shuffle 2's index, data and directory chunk");
    }
  }

  /**
   * One ledger: an application's files and its directories' chunks are units of its node of the
   * byte quotas, a child of its user's node, each with its quota as limit; the figures add up, and
   * ending the applications takes their nodes, then the user's, off the tree with nothing left.
   */
  @Test
  void everyByteAnApplicationHoldsIsOnItsNodeUnderItsUsers() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("e1"), 1, 21, 4, 3);
    ServiceFixture.Output b = write(root.resolve("e2"), 1, 22, 4, 4);
    try (ServiceClient e1 = executor("app-ledger-1", "1", 21);
        ServiceClient e2 = executor("app-ledger-2", "1", 22)) {
      e1.publish(1, 0, 21, a.index(), a.data());
      e2.publish(1, 0, 22, b.index(), b.data());
      List<MemoryAllocator> users = outputsAllocator(service).children();
      assertEquals(1, users.size(), outputsAllocator(service).toVerboseString());
      MemoryAllocator user = users.get(0);
      assertEquals(service.config().userQuota().bytes(), user.limit());
      List<MemoryAllocator> apps = user.children();
      assertEquals(
          List.of("app-ledger-1", "app-ledger-2"),
          apps.stream().map(MemoryAllocator::name).sorted().toList());
      long files = 0;
      for (ServiceFixture.Output o : List.of(a, b)) {
        files += Files.size(o.index()) + Files.size(o.data());
      }
      long directories = service.stats().get("directoryBytes");
      assertTrue(
          directories > 0 && directories <= 2L * ShuffleDirectory.CHUNK_BYTES,
          directories + " bytes: one chunk per application");
      assertEquals(files, service.stats().get("bytesHeld"));
      for (MemoryAllocator app : apps) {
        assertEquals(service.config().applicationQuota().bytes(), app.limit());
        assertEquals(1, app.children().size(), "one executor's directory");
      }
      assertEquals(files + directories, user.registeredBytes());
      assertEquals(files + directories, outputsAllocator(service).registeredBytes());
      assertEquals(1, service.endApplication("app-ledger-1"));
      assertEquals(List.of("app-ledger-2"), names(user.children()));
      assertEquals(1, service.endApplication("app-ledger-2"));
      assertTrue(user.isClosed(), "the user's node went with its last application");
      assertTrue(outputsAllocator(service).children().isEmpty());
      assertEquals(0, outputsAllocator(service).registeredBytes());
      assertTrue(
          service.node().memory().leakReports().isEmpty(),
          service.node().memory().leakReports().toString());
    }
  }

  private static List<String> names(List<MemoryAllocator> l) {
    return l.stream().map(MemoryAllocator::name).toList();
  }

  @Test
  void anApplicationWhoseDriverStopsAnsweringIsRemovedWithinItsTimeout() throws Exception {
    startService(ServiceSettings.PREFIX + "appTimeout", "1s");
    ServiceFixture.Output a = write(root.resolve("e1"), 3, 21, 4, 6);
    try (ServiceClient c = executor("app-3", "1", 9)) {
      c.publish(3, 0, 21, a.index(), a.data());
    }
    assertEquals(1L, service.stats().get("applications"));
    // Still alive after more than the timeout while the driver answers.
    long aliveUntil = System.nanoTime() + Duration.ofMillis(1500).toNanos();
    while (System.nanoTime() < aliveUntil) {
      assertEquals(1L, service.stats().get("applications"), "driver answers: application kept");
      Thread.sleep(100);
    }
    driver.close(); // the driver crashed
    long t0 = System.nanoTime();
    await(
        Duration.ofSeconds(15),
        () -> service.stats().get("applications") == 0,
        "application removed after its driver went away");
    long tookMs = (System.nanoTime() - t0) / 1_000_000;
    // The timeout runs from the driver's last answered probe, up to a probe period (250 ms) and
    // a tick before the close.
    assertTrue(tookMs >= 500, "not before the timeout: " + tookMs + " ms");
    assertEquals(0L, service.stats().get("bytesHeld"));
    assertEquals(0L, service.stats().get("directoryBytes"));
    assertEquals(0, filesUnder(root.resolve("outputs/apps")));
    await(
        Duration.ofSeconds(10),
        () -> service.node().stats().registeredRegions() == 0,
        "every region deregistered");
  }

  @Test
  void aDriverPortThatRefusesConnectionsEndsTheApplicationBeforeTheTimeout() throws Exception {
    startService(ServiceSettings.PREFIX + "appTimeout", "60s");
    ServiceFixture.Output a = write(root.resolve("e1"), 4, 41, 2, 5);
    try (ServiceClient c = executor("app-4", "1", 12)) {
      c.publish(4, 0, 41, a.index(), a.data());
    }
    driver.close(); // the driver stopped: its host refuses the port
    long t0 = System.nanoTime();
    await(
        Duration.ofSeconds(30),
        () -> service.stats().get("applications") == 0,
        "application removed once its driver's port refused connections");
    long tookMs = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(tookMs >= 4_000, "refusals confirmed over the grace first: " + tookMs + " ms");
    assertEquals(0L, service.stats().get("bytesHeld"));
    assertEquals(0, filesUnder(root.resolve("outputs/apps")));
  }

  @Test
  void aDriverThatDoesNotAnswerKeepsItsApplicationUntilTheTimeout() throws Exception {
    // A port whose accept queue is full drops new connections: the probe hears nothing.
    ServiceFixture.SilentPort silent = ServiceFixture.silentPort();
    assumeTrue(silent != null, "this kernel accepts past the backlog; no silent port to test with");
    try (silent) {
      startService(ServiceSettings.PREFIX + "appTimeout", "8s");
      ServiceFixture.Output a = write(root.resolve("e1"), 5, 51, 2, 6);
      // Before the application exists: it was last heard from after t0, so it must stay until
      // t0 + appTimeout however long the publish takes on a slow machine.
      long t0 = System.nanoTime();
      try (ServiceClient c = client(service.socket(), "app-5", "1", token(13), silent.port())) {
        c.publish(5, 0, 51, a.index(), a.data());
      }
      long pastGrace = t0 + Duration.ofSeconds(6).toNanos();
      while (System.nanoTime() < pastGrace) {
        assertEquals(1L, service.stats().get("applications"), "silence is not a refusal");
        Thread.sleep(200);
      }
      await(
          Duration.ofSeconds(20),
          () -> service.stats().get("applications") == 0,
          "application removed after appTimeout of silence");
      long tookMs = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(tookMs >= 7_500, "not before appTimeout: " + tookMs + " ms");
    }
  }

  @Test
  void endApplicationRemovesEveryAttempt() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("e1"), 0, 31, 2, 7);
    ServiceFixture.Output b = write(root.resolve("e2"), 0, 32, 2, 8);
    try (ServiceClient c1 = executor("application_1_0001_1", "1", 10);
        ServiceClient c2 = executor("application_1_0001_2", "1", 11)) {
      c1.publish(0, 0, 31, a.index(), a.data());
      c2.publish(0, 0, 32, b.index(), b.data());
    }
    assertTrue(outputsAllocator(service).registeredBytes() > 0);
    assertEquals(2, service.endApplication("application_1_0001"));
    assertEquals(0, outputsAllocator(service).registeredBytes(), "the consumer's units went");
    assertTrue(outputsAllocator(service).ownLiveUnits().isEmpty());
    assertEquals(0L, service.stats().get("outputsHeld"));
    assertEquals(0, filesUnder(root.resolve("outputs/apps")));
  }

  @Test
  void aRestartedServiceServesNothingOfItsPreviousRun() throws Exception {
    startService();
    int port = service.node().localAddress().getPort();
    ServiceFixture.Output a = write(root.resolve("e1"), 5, 41, 3, 9);
    DirectoryPointer old;
    try (ServiceClient c = executor("app-5", "1", 12)) {
      old = c.publish(5, 0, 41, a.index(), a.data());
    }
    assertArrayEquals(a.partitions()[0], readPartition(reader, old, 0, 0));
    service.close();
    assertHygiene(service);
    service = startService(ServiceSettings.TRANSFER_PREFIX + "port", Integer.toString(port));
    assertEquals(port, service.node().localAddress().getPort(), "same endpoint as before");
    assertEquals(0, filesUnder(root.resolve("outputs/apps")), "previous run's files removed");
    reader.disconnect(old.region().node());
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> readPartition(reader, old, 0, 0));
    assertTrue(e.getCause() instanceof TransferException, e.getCause().toString());
    // The executor's next publish registers again on a new connection.
    try (ServiceClient c = executor("app-5", "1", 12)) {
      DirectoryPointer fresh = c.publish(5, 0, 41, a.index(), a.data());
      assertFalse(fresh.equals(old), "new keys");
      assertArrayEquals(a.partitions()[2], readPartition(reader, fresh, 0, 2));
    }
  }

  @Test
  void aClientReconnectsToARestartedService() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("e1"), 6, 51, 3, 10);
    try (ServiceClient c = executor("app-6", "1", 13)) {
      c.publish(6, 0, 51, a.index(), a.data());
      service.close();
      service = startService();
      DirectoryPointer p = c.publish(6, 0, 51, a.index(), a.data());
      assertArrayEquals(a.partitions()[1], readPartition(reader, p, 0, 1));
      assertEquals(1L, service.stats().get("applications"), "registered again");
    }
  }

  @Test
  void outputsThatAreNotWhatSparkWroteAreRefused() throws Exception {
    startService();
    Path dir = root.resolve("e1");
    ServiceFixture.Output good = write(dir, 7, 61, 4, 11);
    try (ServiceClient c = executor("app-7", "1", 14)) {
      assertRefused(
          ServiceProtocol.E_BAD_OUTPUT,
          "is not named",
          () -> c.publish(7, 0, 62, good.index(), good.data()));
      Path link = dir.resolve("shuffle_7_63_0.index");
      Files.createSymbolicLink(link, good.index());
      Path dataCopy = Files.copy(good.data(), dir.resolve("shuffle_7_63_0.data"));
      // The client resolves links (the service refuses them anywhere in a path): the target's
      // name then does not match.
      assertRefused(
          ServiceProtocol.E_BAD_OUTPUT, "is not named", () -> c.publish(7, 0, 63, link, dataCopy));
      // An index that does not describe its data file.
      ServiceFixture.Output bad = write(dir, 7, 64, 4, 12);
      Files.write(bad.data(), new byte[] {1, 2, 3});
      assertRefused(
          ServiceProtocol.E_BAD_OUTPUT,
          "index ends at",
          () -> c.publish(7, 0, 64, bad.index(), bad.data()));
      ServiceFixture.Output dec = write(dir, 7, 65, 2, 13);
      ByteBuffer idx = ByteBuffer.allocate(24).putLong(0).putLong(50).putLong(10);
      Files.write(dec.index(), idx.array());
      Files.write(dec.data(), new byte[10]);
      assertRefused(
          ServiceProtocol.E_BAD_OUTPUT,
          "decrease",
          () -> c.publish(7, 0, 65, dec.index(), dec.data()));
      // What a process that is not Memwire's client may send: the service checks it itself.
      try (ServiceFixture.Raw raw =
          new ServiceFixture.Raw(service.socket())
              .register("app-7", "2", token(14), driver.getLocalPort())) {
        String e =
            ServiceFixture.error(raw.publish(7, 0, 63, link.toString(), dataCopy.toString()));
        assertTrue(e.startsWith(ServiceProtocol.E_BAD_OUTPUT + ": ") && e.contains("regular"), e);
        e =
            ServiceFixture.error(
                raw.publish(7, 0, 61, dir.resolve("x/../shuffle_7_61_0.index").toString(), null));
        assertTrue(e.contains("absolute"), e);
        e =
            ServiceFixture.error(
                raw.publish(7, 0, 66, dir.resolve("shuffle_7_66_0.index").toString(), null));
        assertTrue(e.startsWith(ServiceProtocol.E_BAD_OUTPUT + ": "), e);
        Path linkedDir = root.resolve("linked-dir");
        Files.createSymbolicLink(linkedDir, dir);
        e =
            ServiceFixture.error(
                raw.publish(
                    7,
                    0,
                    61,
                    linkedDir.resolve("shuffle_7_61_0.index").toString(),
                    linkedDir.resolve("shuffle_7_61_0.data").toString()));
        assertTrue(e.contains("symbolic link"), "a link in a parent directory: " + e);
      }
      // Nothing of the refused outputs is held; the good one still goes through.
      assertEquals(0L, c.stats().get("outputsHeld"));
      DirectoryPointer p = c.publish(7, 0, 61, good.index(), good.data());
      assertArrayEquals(good.partitions()[3], readPartition(reader, p, 0, 3));
      assertEquals(2, filesUnder(root.resolve("outputs/apps")));
    }
  }

  private interface Call {
    void run() throws IOException;
  }

  private static void assertRefused(int code, String text, Call call) {
    ServiceException e = assertThrows(ServiceException.class, call::run);
    assertEquals(code, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains(text), e.getMessage());
  }

  @Test
  void theRegistrationBudgetBoundsWhatTheServiceTakes() throws Exception {
    startService(
        ServiceSettings.TRANSFER_PREFIX + "registrationBudget", "3m",
        ServiceSettings.TRANSFER_PREFIX + "poolMaxBytes", "1m",
        // quotas above the budget: the node's budget is what refuses here
        ServiceSettings.PREFIX + "maxBytesPerApplication", "1g",
        ServiceSettings.PREFIX + "maxBytesPerUser", "1g");
    Path dir = root.resolve("e1");
    Files.createDirectories(dir);
    for (long mapId : new long[] {91, 92}) {
      ByteBuffer index = ByteBuffer.allocate(24).putLong(0).putLong(800_000).putLong(1_600_000);
      Files.write(dir.resolve("shuffle_9_" + mapId + "_0.index"), index.array());
      Files.write(dir.resolve("shuffle_9_" + mapId + "_0.data"), new byte[1_600_000]);
    }
    try (ServiceClient c = executor("app-12", "1", 20)) {
      c.publish(9, 0, 91, dir.resolve("shuffle_9_91_0.index"), dir.resolve("shuffle_9_91_0.data"));
      assertRefused(
          ServiceProtocol.E_NO_CAPACITY,
          "budget",
          () ->
              c.publish(
                  9,
                  1,
                  92,
                  dir.resolve("shuffle_9_92_0.index"),
                  dir.resolve("shuffle_9_92_0.data")));
      assertEquals(1L, c.stats().get("outputsHeld"));
      assertEquals(2, filesUnder(root.resolve("outputs/apps")), "refused links removed");
      c.removeShuffle(9);
      await(
          Duration.ofSeconds(10),
          () -> service.node().stats().registeredRegions() == 0,
          "shuffle 9 deregistered");
      c.publish(9, 1, 92, dir.resolve("shuffle_9_92_0.index"), dir.resolve("shuffle_9_92_0.data"));
      assertEquals(1L, c.stats().get("outputsHeld"), "room again after the removal");
    }
  }

  @Test
  void anotherApplicationCannotJoinWithoutTheToken() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("e1"), 8, 71, 2, 14);
    try (ServiceClient owner = executor("app-8", "1", 15)) {
      owner.publish(8, 0, 71, a.index(), a.data());
      ServiceException e = assertThrows(ServiceException.class, () -> executor("app-8", "2", 16));
      assertEquals(ServiceProtocol.E_DENIED, e.code());
      assertTrue(e.getMessage().contains("another token"), e.getMessage());
      assertEquals(1L, owner.stats().get("outputsHeld"), "the intruder removed nothing");
    }
    ServiceException bad =
        assertThrows(ServiceException.class, () -> executor("../escape", "1", 15));
    assertEquals(ServiceProtocol.E_BAD_REQUEST, bad.code());
  }

  @Test
  void aUserNotAllowedIsRefusedAtConnect() throws Exception {
    startService(ServiceSettings.PREFIX + "allowedUsers", "nobody-else");
    ServiceException e = assertThrows(ServiceException.class, () -> executor("app-9", "1", 17));
    assertEquals(ServiceProtocol.E_DENIED, e.code());
    assertTrue(e.getMessage().contains("may not use"), e.getMessage());
    assertEquals(1L, service.stats().get("clientsRefused"));
    service.close();
    startService(ServiceSettings.PREFIX + "allowedUsers", "*");
    try (ServiceClient c = executor("app-9", "1", 17)) {
      assertEquals(0L, c.stats().get("clientsRefused"), "* admits this user");
    }
  }

  @Test
  void clientsOverMaxClientsAreRefusedAndTheOthersServed() throws Exception {
    startService(ServiceSettings.PREFIX + "maxClients", "1");
    try (ServiceClient first = executor("app-13", "1", 21)) {
      ServiceException e = assertThrows(ServiceException.class, () -> executor("app-13", "2", 21));
      assertEquals(ServiceProtocol.E_NO_CAPACITY, e.code(), e.getMessage());
      assertTrue(e.getMessage().contains("1 clients"), e.getMessage());
      assertEquals(1L, first.stats().get("clientsRefused"), "the first one is still served");
    }
    await(Duration.ofSeconds(10), () -> service.stats().get("clients") == 0, "first client gone");
    try (ServiceClient later = executor("app-13", "2", 21)) {
      assertEquals(1L, later.stats().get("clients"), "room again once the first one left");
    }
  }

  @Test
  void malformedFramesCloseOnlyTheirConnection() throws Exception {
    startService();
    byte[][] attacks = {
      {0, 0, 0, 0, 1}, // length 0
      {0x7f, 0, 0, 0, 1}, // length over the limit
      {0, 0, 0, 1, 99}, // unknown type before REGISTER
      {0, 0, 0, 3, ServiceProtocol.REGISTER, 0, 1}, // truncated REGISTER
    };
    for (byte[] attack : attacks) {
      try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
        ch.connect(UnixDomainSocketAddress.of(service.socket()));
        ch.write(ByteBuffer.wrap(attack));
        ByteBuffer answer = ByteBuffer.allocate(4096);
        // Either an ERROR frame and a close, or a close: never a hang, never a dead service.
        while (ch.read(answer) >= 0) {
          if (!answer.hasRemaining()) {
            throw new AssertionError("service keeps talking to a malformed client");
          }
        }
      }
    }
    ServiceFixture.Output a = write(root.resolve("e1"), 9, 81, 2, 15);
    try (ServiceClient c = executor("app-10", "1", 18)) {
      DirectoryPointer p = c.publish(9, 0, 81, a.index(), a.data());
      assertArrayEquals(a.partitions()[0], readPartition(reader, p, 0, 0));
    }
    await(Duration.ofSeconds(10), () -> service.stats().get("clients") == 0, "sessions ended");
  }

  @Test
  void aSecondServiceOnTheSameSocketIsRefusedAndAStaleSocketIsReplaced() throws Exception {
    startService();
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> ShuffleService.start(ServiceConfig.fromProperties(ServiceFixture.conf(root))));
    assertTrue(e.getMessage().contains("another shuffle service"), e.getMessage());
    service.close();
    Files.createDirectories(service.socket().getParent());
    Files.write(service.socket(), new byte[0]); // left behind by a service that was killed
    service = startService();
    try (ServiceClient c = executor("app-11", "1", 19)) {
      assertEquals(0L, c.stats().get("outputsHeld"));
    }
  }

  @Test
  void sparksChecksumsAreTakenWithTheOutputAndPublishedInline() throws Exception {
    startService();
    Path execDir = root.resolve("exec-c");
    ServiceFixture.Output a = write(execDir, 6, 201, 5, 11);
    ServiceFixture.Output b = write(execDir, 6, 202, 5, 12);
    ServiceFixture.Output c = write(execDir, 6, 203, 5, 13);
    long[] sums = {1, 2, 3, 4, -5};
    ByteBuffer file = ByteBuffer.allocate(sums.length * 8);
    for (long v : sums) {
      file.putLong(v);
    }
    // Spark keeps the checksum file in another subdirectory than the index.
    Path aSums = execDir.resolve("0c/shuffle_6_201_0.checksum.CRC32C");
    Files.createDirectories(aSums.getParent());
    Files.write(aSums, file.array());
    // b has no checksum file (checksums off, an older writer); c's is a link to a's.
    Path cSums = execDir.resolve("0c/shuffle_6_203_0.checksum.CRC32C");
    Files.createSymbolicLink(cSums, aSums);
    DirectoryPointer p;
    try (ServiceClient e = executor("app-c", "1", 21)) {
      p = e.publish(6, 0, 201, a.index(), a.data(), aSums);
      e.publish(6, 1, 202, b.index(), b.data(), null);
      e.publish(6, 2, 203, c.index(), c.data(), cSums);
    }
    TrustedPaths.deleteTree(execDir); // the executor is gone: the service still has them
    assertTrue(p.checksums(), "the shuffle's directory has room for checksums");
    DirectorySlot[] slots = new DirectorySlot[3];
    for (int m = 0; m < 3; m++) {
      slots[m] =
          DirectorySlot.read(
              ByteBuffer.wrap(
                  ServiceFixture.read(reader, p.region(), p.slotOffset(m), p.slotReadLength())),
              p.entries(),
              p.checksums());
      assertNotNull(slots[m], "slot " + m);
    }
    assertEquals(new OutputChecksums(ChecksumAlgorithm.CRC32C, sums), slots[0].checksums());
    assertNull(slots[1].checksums(), "no checksum file: read unverified");
    assertNull(slots[2].checksums(), "a linked checksum file is not followed");
    assertEquals(1L, service.stats().get("outputsWithChecksums"));
    assertEquals(6, filesUnder(root.resolve("outputs/apps")), "no checksum link left behind");
  }

  @Test
  void aWideOutputsChecksumsArePublishedInAMetadataRegionAfterItsEntries() throws Exception {
    startService();
    Path execDir = root.resolve("exec-w");
    int partitions = 1100;
    ServiceFixture.Output a = write(execDir, 8, 301, partitions, 31);
    ServiceFixture.Output b = write(execDir, 8, 302, partitions, 32);
    long[] sums = new long[partitions];
    ByteBuffer file = ByteBuffer.allocate(partitions * 8);
    for (int i = 0; i < partitions; i++) {
      sums[i] = 31L * i + 5;
      file.putLong(sums[i]);
    }
    Path aSums = execDir.resolve("1f/shuffle_8_301_0.checksum.ADLER32");
    Files.createDirectories(aSums.getParent());
    Files.write(aSums, file.array());
    DirectoryPointer p;
    try (ServiceClient e = executor("app-w", "1", 22)) {
      p = e.publish(8, 0, 301, a.index(), a.data(), aSums);
      e.publish(8, 1, 302, b.index(), b.data(), null);
    }
    TrustedPaths.deleteTree(execDir);
    assertEquals(0, p.entries(), "too wide for inline entries");
    assertTrue(p.checksums(), "headers that name metadata regions");
    assertTrue(p.toTopologyInfo(null).startsWith("memwire4:"), p.toString());
    DirectorySlot sa =
        DirectorySlot.read(
            ByteBuffer.wrap(
                ServiceFixture.read(reader, p.region(), p.slotOffset(0), p.slotReadLength())),
            p.entries(),
            p.checksums());
    assertEquals(partitions + 1, sa.metadataEntries());
    assertEquals(ChecksumAlgorithm.ADLER32, sa.metadataAlgorithm());
    ByteBuffer meta =
        ByteBuffer.wrap(
            ServiceFixture.read(
                reader, sa.index(), 0, DirectorySlot.metadataLength(partitions + 1)));
    long offset = 0;
    for (int i = 0; i <= partitions; i++) {
      assertEquals(offset, meta.getLong(i * 8), "entry " + i + ", as in the index file");
      offset += i < partitions ? a.partitions()[i].length : 0;
    }
    for (int i = 0; i < partitions; i++) {
      assertEquals(sums[i], meta.getLong((partitions + 1 + i) * 8), "checksum " + i);
    }
    assertArrayEquals(a.partitions()[700], readPartition(reader, p, 0, 700));
    DirectorySlot sb =
        DirectorySlot.read(
            ByteBuffer.wrap(
                ServiceFixture.read(reader, p.region(), p.slotOffset(1), p.slotReadLength())),
            p.entries(),
            p.checksums());
    assertEquals(0, sb.metadataEntries(), "no checksum file: header only, read unverified");
    assertArrayEquals(b.partitions()[4], readPartition(reader, p, 1, 4));
    assertEquals(1L, service.stats().get("outputsWithChecksums"));
  }
}
