package io.memwire.shuffle.service;

import static io.memwire.shuffle.service.ServiceFixture.await;
import static io.memwire.shuffle.service.ServiceFixture.readPartition;
import static io.memwire.shuffle.service.ServiceFixture.token;
import static io.memwire.shuffle.service.ServiceFixture.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceException;
import io.memwire.shuffle.protocol.ServiceIdentityException;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service attacked the way another local user could: swapping directories during a hand-over,
 * preparing its paths first, holding connections, republishing, sparse files, taking another user's
 * application id, silent drivers. Where an attack needs a second user, a child process runs as
 * {@code nobody} ({@link OtherUser}); without root those tests skip with a one-line reason.
 */
class LocalAttacksTest {
  @TempDir Path root;
  private ServerSocket driver;
  private ShuffleService service;
  private TransferNode reader;
  private final List<Path> shared = new ArrayList<>();
  private final List<Process> children = new ArrayList<>();

  @BeforeEach
  void setUp() throws IOException {
    driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    reader = ServiceFixture.reader();
  }

  @AfterEach
  void tearDown() throws Exception {
    for (Process p : children) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
    if (service != null) {
      service.close();
      assertEquals(0, service.node().stats().registeredRegions(), "every region deregistered");
    }
    reader.close();
    driver.close();
    for (Path p : shared) {
      TrustedPaths.deleteTree(p);
    }
  }

  private ShuffleService start(Path base, String... extra) throws IOException {
    service = ShuffleService.start(ServiceConfig.fromProperties(ServiceFixture.conf(base, extra)));
    return service;
  }

  private Path sharedDirectory() throws IOException {
    Path d = OtherUser.sharedDirectory();
    shared.add(d);
    return d;
  }

  private static String otherUserOrSkip() {
    String why = OtherUser.unavailable();
    assumeTrue(why == null, () -> "no second local user: " + why);
    return OtherUser.NAME;
  }

  private List<String> runAsOther(long seconds, String... args) throws Exception {
    Process p = OtherUser.java(OtherUserClient.class, args);
    children.add(p);
    String out = OtherUser.output(p, seconds);
    return out.lines().toList();
  }

  private ServiceClient executor(String app, String exec, int seed) throws IOException {
    return ServiceFixture.client(service.socket(), app, exec, token(seed), driver.getLocalPort());
  }

  private static DirectoryPointer pointer(String base64) {
    ByteBuffer b = ByteBuffer.wrap(Base64.getDecoder().decode(base64));
    int chunk = b.getInt();
    int entries = b.getInt();
    boolean checksums = (b.get() & ServiceProtocol.LAYOUT_CHECKSUMS) != 0;
    return new DirectoryPointer(chunk, entries, checksums, RemoteRegion.decode(b.slice()));
  }

  /** Writes a valid map output whose every partition is {@code fill}, owned by the caller. */
  private static byte[][] output(Path dir, long mapId, byte fill) throws IOException {
    Files.createDirectories(dir);
    byte[][] parts = new byte[2][1000];
    ByteBuffer index = ByteBuffer.allocate(24).putLong(0).putLong(1000).putLong(2000);
    java.util.Arrays.fill(parts[0], fill);
    java.util.Arrays.fill(parts[1], fill);
    Files.write(dir.resolve("shuffle_1_" + mapId + "_0.index"), index.array());
    byte[] data = new byte[2000];
    java.util.Arrays.fill(data, fill);
    Files.write(dir.resolve("shuffle_1_" + mapId + "_0.data"), data);
    return parts;
  }

  /**
   * Item 1: an unprivileged user hands over files in a directory it keeps swapping with a link to a
   * directory of root's holding valid outputs of the same names. Whatever the timing, the service
   * serves only the attacker's own bytes; "replaced while the service took it" refusals show the
   * race between the check and the link was really hit (code that checks one path and links another
   * would have served root's file there).
   */
  @Test
  void swappingADirectoryDuringTheHandOverNeverServesAnotherUsersFile() throws Exception {
    otherUserOrSkip();
    Path base = sharedDirectory();
    start(base, ServiceSettings.PREFIX + "allowedUsers", "*");
    Path victim = Files.createDirectory(base.resolve("victim"));
    Files.setPosixFilePermissions(victim, PosixFilePermissions.fromString("rwx------"));
    byte[][] secret = output(victim, 7, (byte) 'S');
    Path attacker = OtherUser.ownedDirectory(base, "attacker");
    Path real = attacker.resolve("real");
    byte[][] own = output(real, 7, (byte) 'a');
    for (Path p :
        List.of(real, real.resolve("shuffle_1_7_0.index"), real.resolve("shuffle_1_7_0.data"))) {
      Files.setAttribute(p, "unix:uid", OtherUser.UID);
    }
    Files.createSymbolicLink(attacker.resolve("link"), victim);
    Files.setAttribute(
        attacker.resolve("link"),
        "unix:uid",
        OtherUser.UID,
        java.nio.file.LinkOption.NOFOLLOW_LINKS);
    // The attacker renames "real" and "link" in and out of "d" as fast as it can.
    Process racer =
        OtherUser.perl(
            "chdir $ARGV[0] or die; my $end = time + $ARGV[1];"
                + " while (time < $end) { rename('real','d'); select(undef,undef,undef,0.0003);"
                + " rename('d','real'); rename('link','d'); rename('d','link'); }",
            attacker.toString(),
            "70");
    children.add(racer);
    Path d = attacker.resolve("d");
    int served = 0;
    int replaced = 0;
    int attempts = 0;
    int run = 0;
    // Up to 50 s: on a loaded 2-core machine the racer may win its first swap late.
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(50);
    while (System.nanoTime() < until && (replaced < 3 || served < 5)) {
      // Each run a new application: a file the service holds has a second name, so it is taken
      // once per application that holds it.
      String app = "app-attack-" + run++;
      List<String> lines =
          runAsOther(
              120,
              "attack",
              service.socket().toString(),
              app,
              Integer.toString(driver.getLocalPort()),
              d.resolve("shuffle_1_7_0.index").toString(),
              d.resolve("shuffle_1_7_0.data").toString(),
              "7",
              "500");
      for (String line : lines) {
        attempts++;
        String[] f = line.split(" ", 3);
        assertEquals(3, f.length, line);
        if (f[1].equals("OK")) {
          served++;
          int mapIndex = Integer.parseInt(f[0]);
          DirectoryPointer p = pointer(f[2]);
          for (int part = 0; part < 2; part++) {
            byte[] got = readPartition(reader, p, mapIndex, part);
            assertFalse(java.util.Arrays.equals(secret[part], got), "root's bytes were served");
            assertArrayEquals(own[part], got, "the attacker's own bytes");
          }
        } else if (line.contains("replaced while the service took it")) {
          replaced++;
        }
      }
      // Every file the service holds is the attacker's.
      try (Stream<Path> held = Files.walk(base.resolve("outputs/apps"))) {
        for (Path f : (Iterable<Path>) held.filter(Files::isRegularFile)::iterator) {
          assertEquals(OtherUser.UID, Files.getAttribute(f, "unix:uid"), f.toString());
        }
      }
      service.endApplication(app);
    }
    racer.destroyForcibly();
    System.out.printf(
        "swap race: %d hand-overs, %d served (all the attacker's bytes), %d refused as swapped%n",
        attempts, served, replaced);
    assertTrue(
        served > 0 && replaced > 0,
        "the race was exercised: "
            + attempts
            + " hand-overs, "
            + served
            + " served, "
            + replaced
            + " refused as swapped between check and link");
  }

  /** Item 2: paths another user prepared, or reached through links, are refused at start. */
  @Test
  void pathsAnotherUserControlsAreRefusedAndCleanupFollowsNoLink() throws Exception {
    // A link as the service's directory.
    Path elsewhere = Files.createDirectory(root.resolve("elsewhere"));
    Files.createSymbolicLink(root.resolve("out-link"), elsewhere);
    IOException e =
        assertThrows(
            IOException.class,
            () ->
                start(
                    root.resolve("a"),
                    ServiceSettings.PREFIX + "dir",
                    root.resolve("out-link").toString()));
    assertTrue(
        e.getMessage().contains("symbolic link") && e.getMessage().contains(".dir"),
        e.getMessage());
    // A directory others may write to.
    Path open = Files.createDirectory(root.resolve("open"));
    Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
    e =
        assertThrows(
            IOException.class,
            () -> start(root.resolve("b"), ServiceSettings.PREFIX + "dir", open.toString()));
    assertTrue(e.getMessage().contains("other users may write"), e.getMessage());
    // Start-up cleanup removes a link planted in its directory, never what it points to.
    Path victim = Files.createDirectory(root.resolve("victim"));
    Files.writeString(victim.resolve("precious"), "keep me");
    Path apps = Files.createDirectories(root.resolve("c/outputs/apps"));
    Files.createSymbolicLink(apps.resolve("planted"), victim);
    Files.createDirectories(apps.resolve("old-app/1"));
    Files.createSymbolicLink(
        apps.resolve("old-app/1/shuffle_0_1_0.data"), victim.resolve("precious"));
    start(root.resolve("c"));
    assertEquals("keep me", Files.readString(victim.resolve("precious")));
    try (Stream<Path> l = Files.list(apps)) {
      assertEquals(0, l.count(), "the planted links are gone");
    }
    service.close();
    service = null;
    // Another user's directory on the way (needs root to make one).
    assumeTrue(
        OtherUser.unavailable() == null, () -> "no second local user: " + OtherUser.unavailable());
    Path foreign = OtherUser.ownedDirectory(root, "foreign");
    e =
        assertThrows(
            IOException.class,
            () ->
                start(
                    root.resolve("d"),
                    ServiceSettings.PREFIX + "socket",
                    foreign.resolve("service.sock").toString()));
    assertTrue(
        e.getMessage().contains("uid " + OtherUser.UID) && e.getMessage().contains(".socket"),
        e.getMessage());
  }

  /** Item 2: an executor checks who listens before it sends its token, and says why it stops. */
  @Test
  void anExecutorSendsNothingToASocketOfAnUnexpectedUser() throws Exception {
    Path socket = root.resolve("fake.sock");
    try (ServerSocketChannel fake = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      fake.bind(UnixDomainSocketAddress.of(socket));
      ServiceIdentityException e =
          assertThrows(
              ServiceIdentityException.class,
              () ->
                  ServiceClient.connect(
                      socket,
                      new ServiceClient.Registration(
                          "app-1", "1", token(1), "127.0.0.1", driver.getLocalPort()),
                      Duration.ofSeconds(5),
                      java.util.Set.of("memwire-service")));
      String me = System.getProperty("user.name");
      assertEquals(me, e.user());
      assertTrue(
          e.getMessage().contains("runs as user " + me)
              && e.getMessage().contains("[memwire-service]")
              && e.getMessage().contains("nothing was sent"),
          e.getMessage());
      try (SocketChannel accepted = fake.accept()) {
        ByteBuffer b = ByteBuffer.allocate(64);
        assertEquals(-1, accepted.read(b), "the client closed without sending a byte");
      }
    }
  }

  /** Item 3: connections that never register, or stall inside a frame, are closed. */
  @Test
  void connectionsThatDoNotRegisterOrStallInAFrameAreClosed() throws Exception {
    start(
        root,
        ServiceSettings.PREFIX + "registerTimeout",
        "500ms",
        ServiceSettings.PREFIX + "frameTimeout",
        "500ms",
        ServiceSettings.PREFIX + "maxClients",
        "2",
        ServiceSettings.PREFIX + "maxClientsPerApplication",
        "2");
    SocketChannel silent = SocketChannel.open(UnixDomainSocketAddress.of(service.socket()));
    long t0 = System.nanoTime();
    assertEquals(-1, silent.read(ByteBuffer.allocate(8)), "closed by the service");
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(ms >= 400 && ms < 5000, "closed after registerTimeout: " + ms + " ms");
    silent.close();
    // Registered, then one byte of a frame and nothing more.
    try (ServiceFixture.Raw raw =
        new ServiceFixture.Raw(service.socket())
            .register("app-1", "1", token(1), driver.getLocalPort())) {
      raw.channel.write(ByteBuffer.wrap(new byte[] {0}));
      assertEquals(-1, raw.channel.read(ByteBuffer.allocate(8)), "closed inside the frame");
    }
    // A registered executor that is just idle keeps its connection past both deadlines.
    try (ServiceClient idle = executor("app-2", "1", 2)) {
      Thread.sleep(1200);
      assertEquals(1L, idle.stats().get("clients"), "the idle executor is still connected");
      assertTrue(idle.stats().get("clientsTimedOut") >= 2);
    }
    // The service notices the idle executor's close on its own thread: wait for that first.
    await(Duration.ofSeconds(5), () -> service.stats().get("clients") == 0, "no client left");
    // The slots the silent ones held are free: both of maxClients=2 can be used.
    try (ServiceClient a = executor("app-3", "1", 3);
        ServiceClient b = executor("app-3", "2", 3)) {
      assertEquals(2L, a.stats().get("clients"));
    }
  }

  /** Item 3: one user at its connection quota leaves room for another user. */
  @Test
  void oneUserAtItsConnectionQuotaDoesNotLockOutAnother() throws Exception {
    otherUserOrSkip();
    Path base = sharedDirectory();
    start(
        base,
        ServiceSettings.PREFIX + "allowedUsers",
        "*",
        ServiceSettings.PREFIX + "maxClients",
        "6");
    // Several users may connect: each gets half of maxClients by default.
    List<SocketChannel> held = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        held.add(SocketChannel.open(UnixDomainSocketAddress.of(service.socket())));
      }
      await(Duration.ofSeconds(5), () -> service.stats().get("clients") == 3, "3 connections");
      ServiceException e = assertThrows(ServiceException.class, () -> executor("app-1", "1", 1));
      assertEquals(ServiceProtocol.E_NO_CAPACITY, e.code());
      assertTrue(e.getMessage().contains("maxClientsPerUser"), e.getMessage());
      List<String> other =
          runAsOther(
              60,
              "register",
              service.socket().toString(),
              "app-other",
              "1",
              "5",
              Integer.toString(driver.getLocalPort()));
      assertEquals(List.of("OK "), other, "the other user registers");
    } finally {
      for (SocketChannel c : held) {
        c.close();
      }
    }
  }

  /**
   * Descriptors this JVM holds on files under the test's root, deleted ones included: only the
   * service's own files count, not the jars, sockets and selectors the JVM opens meanwhile.
   */
  private long openFiles() throws IOException {
    String under = root.toRealPath().toString() + "/";
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      return fds.filter(
              fd -> {
                try {
                  return Files.readSymbolicLink(fd).toString().startsWith(under);
                } catch (IOException gone) {
                  return false; // closed while listing
                }
              })
          .count();
    }
  }

  /** Item 3: republishing replaces the output: no regions, links or descriptors accumulate. */
  @Test
  void republishingReplacesAndKeepsNothingOfTheEarlierOutput() throws Exception {
    start(root);
    Path dir = root.resolve("e1");
    try (ServiceClient c = executor("app-1", "1", 1)) {
      ServiceFixture.Output first = write(dir, 3, 100, 4, 1);
      DirectoryPointer p = c.publish(3, 0, 100, first.index(), first.data());
      assertEquals(p, c.publish(3, 0, 100, first.index(), first.data()), "the same attempt again");
      long regions = service.node().stats().registeredRegions();
      long files = openFiles();
      ServiceFixture.Output last = null;
      for (int i = 1; i <= 40; i++) {
        last = write(dir, 3, 100 + i, 4, 1 + i);
        assertEquals(p, c.publish(3, 0, 100 + i, last.index(), last.data()));
      }
      for (int part = 0; part < 4; part++) {
        assertArrayEquals(last.partitions()[part], readPartition(reader, p, 0, part));
      }
      assertEquals(1L, c.stats().get("outputsHeld"));
      assertEquals(40L, c.stats().get("outputsReplaced"));
      ServiceFixture.Output finalOut = last;
      await(
          Duration.ofSeconds(10),
          () -> service.node().stats().registeredRegions() == regions,
          "replaced regions deregistered");
      assertTrue(openFiles() <= files, "descriptors on outputs: " + files + " then " + openFiles());
      try (Stream<Path> linked = Files.walk(root.resolve("outputs/apps"))) {
        assertEquals(2, linked.filter(Files::isRegularFile).count(), "two linked files held");
      }
      assertTrue(Files.exists(finalOut.index()));
    }
  }

  /** Item 3: quotas of outputs and bytes, sparse files counted in full, refusals name the app. */
  @Test
  void quotasOfOutputsAndBytesNameTheApplicationAndCountSparseFilesInFull() throws Exception {
    start(
        root,
        ServiceSettings.PREFIX + "maxOutputsPerApplication",
        "2",
        ServiceSettings.PREFIX + "maxBytesPerUser",
        "64m");
    Path dir = root.resolve("e1");
    try (ServiceClient a = executor("app-greedy", "1", 1);
        ServiceClient b = executor("app-modest", "1", 2)) {
      for (int m = 0; m < 2; m++) {
        ServiceFixture.Output o = write(dir, 1, 10 + m, 3, m);
        a.publish(1, m, 10 + m, o.index(), o.data());
      }
      ServiceFixture.Output third = write(dir, 1, 12, 3, 3);
      ServiceException e =
          assertThrows(
              ServiceException.class, () -> a.publish(1, 2, 12, third.index(), third.data()));
      assertEquals(ServiceProtocol.E_QUOTA, e.code());
      assertTrue(
          e.getMessage().contains("app-greedy")
              && e.getMessage().contains("maxOutputsPerApplication"),
          e.getMessage());
      ServiceFixture.Output fine = write(dir, 1, 20, 3, 4);
      b.publish(1, 0, 20, fine.index(), fine.data()); // another application is not affected
      // A sparse 1 GiB data file: almost no disk, counted at its length against the application's
      // 32m (half its user's 64m), the first limit on the way.
      Path sparseIndex = dir.resolve("shuffle_1_21_0.index");
      Path sparseData = dir.resolve("shuffle_1_21_0.data");
      Files.write(sparseIndex, ByteBuffer.allocate(16).putLong(0).putLong(1L << 30).array());
      try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(sparseData.toFile(), "rw")) {
        f.setLength(1L << 30);
      }
      e = assertThrows(ServiceException.class, () -> b.publish(1, 1, 21, sparseIndex, sparseData));
      assertEquals(ServiceProtocol.E_QUOTA, e.code());
      assertTrue(
          e.getMessage().contains("app-modest")
              && e.getMessage().contains("maxBytesPerApplication"),
          e.getMessage());
      assertEquals(3L, b.stats().get("outputsHeld"));
      assertTrue(b.stats().get("quotaRefusals") >= 2);
      // Removing a shuffle gives the quota back.
      a.removeShuffle(1);
      a.publish(1, 2, 12, third.index(), third.data());
    }
  }

  /**
   * Each application within its own quota, together over their user's: the user's node of the byte
   * quotas refuses, naming the user and the key, and nothing of the refused output stays.
   */
  @Test
  void theUsersByteQuotaBoundsItsApplicationsTogether() throws Exception {
    start(
        root,
        ServiceSettings.PREFIX + "maxBytesPerUser",
        "64m",
        ServiceSettings.PREFIX + "maxBytesPerApplication",
        "48m");
    Path dir = root.resolve("e1");
    try (ServiceClient a = executor("app-first", "1", 1);
        ServiceClient b = executor("app-second", "1", 2)) {
      a.publish(1, 0, 30, sparse(dir, 30, 40L << 20), dir.resolve("shuffle_1_30_0.data"));
      long regions = service.node().stats().registeredRegions();
      ServiceException e =
          assertThrows(
              ServiceException.class,
              () ->
                  b.publish(
                      1, 0, 31, sparse(dir, 31, 40L << 20), dir.resolve("shuffle_1_31_0.data")));
      assertEquals(ServiceProtocol.E_QUOTA, e.code());
      assertTrue(
          e.getMessage().contains("user ") && e.getMessage().contains("maxBytesPerUser"),
          e.getMessage());
      assertEquals(regions, service.node().stats().registeredRegions(), "nothing of it stayed");
      assertEquals(1L, b.stats().get("refusals.maxBytesPerUser"));
      a.removeShuffle(1); // the user's bytes come back: the second application fits now
      b.publish(1, 0, 32, sparse(dir, 32, 40L << 20), dir.resolve("shuffle_1_32_0.data"));
    }
  }

  /** A map output of one sparse partition of {@code length} bytes; returns its index file. */
  private static Path sparse(Path dir, long mapId, long length) throws IOException {
    Files.createDirectories(dir);
    Path index = dir.resolve("shuffle_1_" + mapId + "_0.index");
    Files.write(index, ByteBuffer.allocate(16).putLong(0).putLong(length).array());
    try (java.io.RandomAccessFile f =
        new java.io.RandomAccessFile(
            dir.resolve("shuffle_1_" + mapId + "_0.data").toFile(), "rw")) {
      f.setLength(length);
    }
    return index;
  }

  /**
   * The node's output limit is lowered at start to what the descriptor and mapping limits allow;
   * the per-user and per-application limits derived from it must follow, or one user could hold
   * every output slot of the node. Configured far above any process limit, so it is always lowered.
   */
  @Test
  void derivedOutputLimitsFollowTheLoweredNodeLimit() throws Exception {
    start(
        root,
        ServiceSettings.PREFIX + "allowedUsers",
        "*",
        ServiceSettings.PREFIX + "maxOutputs",
        String.valueOf(1L << 40));
    long node = service.maxOutputs();
    assertTrue(node < 1L << 39, "lowered at start: " + node);
    assertEquals(node, service.config().nodeQuota().outputs());
    assertEquals(Math.max(1, node / 2), service.config().userQuota().outputs(), "half, per user");
    assertEquals(
        Math.max(1, service.config().userQuota().outputs() / 2),
        service.config().applicationQuota().outputs(),
        "half of the user's share, per application");
  }

  /**
   * With several users each user may hold half of the node's bytes and each application half of its
   * user's share: one application of sparse files (8 GiB registered, almost nothing on disk) cannot
   * take its user's whole share, so the user's next application still gets its outputs in.
   */
  @Test
  void oneApplicationCannotTakeItsUsersWholeShare() throws Exception {
    start(
        root,
        ServiceSettings.PREFIX + "allowedUsers",
        "*",
        ServiceSettings.TRANSFER_PREFIX + "registrationBudget",
        "16g");
    assertEquals(8L << 30, service.config().userQuota().bytes());
    Path dir = root.resolve("e1");
    Files.createDirectories(dir);
    long chunk = ShuffleDirectory.CHUNK_BYTES;
    try (ServiceClient greedy = executor("app-greedy", "1", 1);
        ServiceClient next = executor("app-next", "1", 2)) {
      // Four sparse outputs of one segment each that, with their 16-byte indexes and the
      // directory chunk, make exactly the user's 8 GiB.
      long length = (2L << 30) - chunk / 4 - 16;
      ServiceException refused = null;
      int taken = 0;
      for (int m = 0; m < 4 && refused == null; m++) {
        Path index = dir.resolve("shuffle_1_" + (50 + m) + "_0.index");
        Path data = dir.resolve("shuffle_1_" + (50 + m) + "_0.data");
        Files.write(index, ByteBuffer.allocate(16).putLong(0).putLong(length).array());
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(data.toFile(), "rw")) {
          f.setLength(length);
        }
        try {
          greedy.publish(1, m, 50 + m, index, data);
          taken++;
        } catch (ServiceException e) {
          refused = e;
        }
      }
      assertTrue(refused != null, "one application took its user's whole 8 GiB");
      assertEquals(ServiceProtocol.E_QUOTA, refused.code(), refused.getMessage());
      assertTrue(
          refused.getMessage().contains("app-greedy")
              && refused.getMessage().contains("maxBytesPerApplication"),
          refused.getMessage());
      assertEquals(1, taken, "half of the user's share: one 2 GiB output and the chunk");
      ServiceFixture.Output fine = write(root.resolve("e2"), 1, 60, 3, 4);
      DirectoryPointer p = next.publish(1, 0, 60, fine.index(), fine.data());
      assertArrayEquals(fine.partitions()[2], readPartition(reader, p, 0, 2));
      assertEquals(2L, next.stats().get("outputsHeld"));
    }
  }

  /**
   * The files stay the owner's after the hand-over, so it can truncate them under the service's
   * mapping. A large partition (sent by sendfile, which would send nothing, until writeTimeout) and
   * a small one (gathered from the mapping, where the kernel faults) then fail their reads at once
   * and are refused as FILE_SHRUNK afterwards; the owner's other output and another application's
   * stay readable, and the service still holds and finally releases everything.
   */
  @Test
  void truncatingAnOutputAfterItsHandOverFailsOnlyItsOwnReads() throws Exception {
    start(root);
    Path dir = root.resolve("e1");
    try (ServiceClient a = executor("app-truncating", "1", 1);
        ServiceClient b = executor("app-bystander", "1", 2)) {
      byte[][] large = new byte[2][1 << 20];
      new java.util.Random(7).nextBytes(large[0]);
      new java.util.Random(8).nextBytes(large[1]);
      Path largeIndex = dir.resolve("shuffle_1_30_0.index");
      Path largeData = dir.resolve("shuffle_1_30_0.data");
      Files.createDirectories(dir);
      Files.write(
          largeIndex, ByteBuffer.allocate(24).putLong(0).putLong(1 << 20).putLong(2 << 20).array());
      Files.write(largeData, large[0]);
      Files.write(largeData, large[1], StandardOpenOption.APPEND);
      DirectoryPointer p = a.publish(1, 0, 30, largeIndex, largeData);
      ServiceFixture.Output small = write(dir, 1, 31, 4, 31);
      a.publish(1, 1, 31, small.index(), small.data());
      ServiceFixture.Output kept = write(dir, 1, 32, 4, 32);
      a.publish(1, 2, 32, kept.index(), kept.data());
      ServiceFixture.Output other = write(root.resolve("e2"), 1, 40, 4, 40);
      DirectoryPointer q = b.publish(1, 0, 40, other.index(), other.data());
      assertArrayEquals(large[1], readPartition(reader, p, 0, 1));
      assertArrayEquals(small.partitions()[1], readPartition(reader, p, 1, 1));

      for (Path data : List.of(largeData, small.data())) {
        try (FileChannel ch = FileChannel.open(data, StandardOpenOption.WRITE)) {
          ch.truncate(10);
        }
      }
      for (int map = 0; map < 2; map++) {
        int m = map;
        // readPartition waits 30 s, far below the service's writeTimeout (60 s).
        ExecutionException first =
            assertThrows(ExecutionException.class, () -> readPartition(reader, p, m, 1));
        assertTrue(first.getCause() instanceof TransferException, first.toString());
        ExecutionException again =
            assertThrows(ExecutionException.class, () -> readPartition(reader, p, m, 1));
        assertEquals(
            RemoteAccessException.Reason.FILE_SHRUNK,
            ((RemoteAccessException) again.getCause()).reason(),
            again.toString());
      }
      assertArrayEquals(kept.partitions()[1], readPartition(reader, p, 2, 1));
      assertArrayEquals(other.partitions()[3], readPartition(reader, q, 0, 3));
      assertEquals(4L, a.stats().get("outputsHeld"));
      long regions = service.node().stats().registeredRegions();
      a.removeShuffle(1);
      assertEquals(1L, a.stats().get("outputsHeld"), "the bystander's output is left");
      await(
          Duration.ofSeconds(10),
          () -> service.node().stats().registeredRegions() <= regions - 6,
          "the three outputs' regions, truncated ones included, deregistered");
    }
  }

  /**
   * A directory chunk costs 256 KiB of registered memory however few slots it holds, so tiny
   * outputs each in a chunk of its own (one per shuffle, or map indexes a chunk apart) would make
   * the service allocate 256 KiB per 24-byte output. Chunks count against the byte quotas: the
   * application is refused once its chunks fill its quota, naming the key, another application is
   * not, and removing the shuffles gives the bytes back.
   */
  @Test
  void directoryChunksCountAgainstTheByteQuotas() throws Exception {
    start(root, ServiceSettings.PREFIX + "maxBytesPerApplication", "4m");
    Path dir = root.resolve("e1");
    try (ServiceClient a = executor("app-sparse", "1", 1);
        ServiceClient b = executor("app-modest", "1", 2)) {
      int taken = 0;
      ServiceException refused = null;
      for (int m = 1; m <= 64 && refused == null; m++) {
        output(dir, m, (byte) m);
        Path index = dir.resolve("shuffle_1_" + m + "_0.index");
        Path data = dir.resolve("shuffle_1_" + m + "_0.data");
        // Map indexes 1024 apart: each output lands in a chunk of its own.
        try {
          a.publish(1, (m - 1) * ShuffleDirectory.SLOTS_PER_CHUNK, m, index, data);
          taken++;
        } catch (ServiceException e) {
          refused = e;
        }
      }
      assertTrue(refused != null, "64 chunks of 256 KiB fit in a 4 MiB quota");
      assertEquals(ServiceProtocol.E_QUOTA, refused.code());
      assertTrue(
          refused.getMessage().contains("app-sparse")
              && refused.getMessage().contains("maxBytesPerApplication")
              && refused.getMessage().contains("directory chunk"),
          refused.getMessage());
      assertTrue(taken >= 12 && taken <= 16, taken + " outputs taken");
      long directoryBytes = service.stats().get("directoryBytes");
      assertTrue(directoryBytes <= 4L << 20, directoryBytes + " bytes of directories");
      assertEquals((long) taken, a.stats().get("outputsHeld"));

      ServiceFixture.Output fine = write(root.resolve("e2"), 1, 20, 3, 4);
      b.publish(1, 0, 20, fine.index(), fine.data()); // another application is not affected

      a.removeShuffle(1);
      assertEquals(1L, a.stats().get("outputsHeld"));
      ServiceFixture.Output again = write(dir, 1, 99, 3, 5);
      DirectoryPointer p =
          a.publish(1, 5 * ShuffleDirectory.SLOTS_PER_CHUNK, 99, again.index(), again.data());
      assertArrayEquals(
          again.partitions()[1], readPartition(reader, p, 5 * ShuffleDirectory.SLOTS_PER_CHUNK, 1));
    }
  }

  /** Item 4: ids are per user; a driver address, once registered, is the only one probed. */
  @Test
  void applicationIdsArePerUserAndTheirDriverAddressIsFixed() throws Exception {
    start(root.resolve("same-user"));
    ServiceFixture.Output o = write(root.resolve("e1"), 2, 5, 3, 1);
    try (ServiceClient c = executor("app-1", "1", 1)) {
      c.publish(2, 0, 5, o.index(), o.data());
      try (ServerSocket other = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
        ServiceException e =
            assertThrows(
                ServiceException.class,
                () ->
                    ServiceFixture.client(
                        service.socket(), "app-1", "2", token(1), other.getLocalPort()));
        assertEquals(ServiceProtocol.E_DENIED, e.code());
        assertTrue(e.getMessage().contains("another driver address"), e.getMessage());
      }
    }
    service.close();
    service = null;
    otherUserOrSkip();
    Path base = sharedDirectory();
    start(base, ServiceSettings.PREFIX + "allowedUsers", "*");
    String port = Integer.toString(driver.getLocalPort());
    // The other user takes "app-shared" first, with its own token.
    assertEquals(
        List.of("OK "),
        runAsOther(60, "register", service.socket().toString(), "app-shared", "1", "77", port));
    ServiceFixture.Output mine = write(root.resolve("e-mine"), 4, 40, 3, 2);
    try (ServiceClient c = executor("app-shared", "1", 1)) {
      DirectoryPointer p = c.publish(4, 0, 40, mine.index(), mine.data());
      // The other user cannot remove it, with its token or with a guess of ours.
      for (String seed : List.of("77", "1")) {
        List<String> r =
            runAsOther(60, "remove", service.socket().toString(), "app-shared", seed, port, "4");
        assertEquals(1, r.size(), r.toString());
      }
      assertArrayEquals(mine.partitions()[1], readPartition(reader, p, 0, 1));
      assertEquals(1L, c.stats().get("outputsHeld"));
      assertEquals(2L, c.stats().get("applications"), "one entry per user");
    }
  }

  /** Item 5: silent drivers cannot delay another application's end past its bound. */
  @Test
  void silentDriversDoNotDelayAnotherApplicationsEnd() throws Exception {
    ServiceFixture.SilentPort silent = ServiceFixture.silentPort();
    assumeTrue(silent != null, "this kernel accepts past the backlog; no silent port to test with");
    try (silent) {
      start(root, ServiceSettings.PREFIX + "appTimeout", "60s");
      List<ServiceClient> clients = new ArrayList<>();
      try {
        for (int i = 0; i < 12; i++) {
          clients.add(
              ServiceFixture.client(
                  service.socket(), "app-silent-" + i, "1", token(100 + i), silent.port()));
        }
        try (ServiceClient c = executor("app-ends", "1", 1)) {
          assertEquals(13L, c.stats().get("applications"));
        }
        driver.close(); // the driver of app-ends stops: its port refuses
        long t0 = System.nanoTime();
        await(
            Duration.ofSeconds(30),
            () -> service.stats().get("applications") == 12,
            "app-ends ended");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        // 5 s of refusals, a probe period and one probe timeout (2 s): 12 serial probes of 2 s
        // would take 24 s a round.
        assertTrue(ms < 10_000, "ended " + ms + " ms after its driver stopped");
      } finally {
        for (ServiceClient c : clients) {
          c.close();
        }
      }
    }
  }
}
