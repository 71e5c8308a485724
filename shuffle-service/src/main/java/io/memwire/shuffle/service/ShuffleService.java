package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.service.protocol.ServiceProtocol;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.RegisteredAllocator;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The per-node shuffle service: it takes over finished map outputs from the executors of its node
 * (over a Unix domain socket, {@link ClientSession}), owns their files (hard links in its own
 * directory), registers them with its own {@link TransferNode} and publishes them in a {@link
 * ShuffleDirectory} per application and executor, so reducers keep reading them one-sided, with no
 * CPU of the service involved over verbs, after the executor that wrote them is gone.
 *
 * <p>An application's outputs go when Spark removes a shuffle (any executor of the application
 * forwards {@code unregisterShuffle}), when its driver's RPC port refuses TCP connections for 5 s
 * (application end, driver crash) or does not answer for {@code appTimeout} (host gone), when
 * {@link #endApplication} is called (YARN's stopApplication), or when the service stops. A
 * restarted service starts empty with new keys: readers holding old descriptors get remote-access
 * errors, so Spark reruns the map stage, never reads stale bytes.
 *
 * <p>Threads (all daemons, joined by {@link #close}): {@code memwire-shuffle-service-accept}
 * accepts executors; {@code memwire-shuffle-service-client-N} serves one executor each; {@code
 * memwire-shuffle-service-liveness} probes drivers and ends applications.
 */
public final class ShuffleService implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleService.class);
  private static final AtomicInteger SESSIONS = new AtomicInteger();

  private final ServiceConfig config;
  private final TransferNode node;
  private final RegisteredAllocator directories;
  private final ServerSocketChannel server;
  private final Path appsDir;
  private final Map<String, Application> apps = new ConcurrentHashMap<>();
  private final Set<ClientSession> sessions = ConcurrentHashMap.newKeySet();
  private final Thread acceptor;
  private final ScheduledExecutorService liveness;

  /** How often a driver that answers is probed. */
  private final long probeEveryNanos;

  /** The liveness thread's period; also how soon a refused probe is repeated. */
  private final long tickNanos;

  /** How long a driver's port must refuse every probe before its application ends. */
  private final long refusedGraceNanos;

  private final CountDownLatch stopped = new CountDownLatch(1);
  private final LongAdder outputsTaken = new LongAdder();
  private final LongAdder outputsRefused = new LongAdder();
  private final LongAdder clientsRefused = new LongAdder();
  private final LongAdder applicationsEnded = new LongAdder();
  private final LongAdder shufflesRemoved = new LongAdder();
  private volatile boolean closed;

  /** A request the service refuses, with the protocol's error code. */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    final int code;

    Refused(int code, String message) {
      super(message);
      this.code = code;
    }
  }

  private ShuffleService(ServiceConfig config, TransferNode node, ServerSocketChannel server) {
    this.config = config;
    this.node = node;
    this.server = server;
    this.directories = node.memory().newChild(ShuffleDirectory.ALLOCATOR);
    this.appsDir = config.dir().resolve("apps");
    long timeoutMs = config.appTimeout().toMillis();
    this.probeEveryNanos =
        TimeUnit.MILLISECONDS.toNanos(Math.max(250, Math.min(10_000, timeoutMs / 4)));
    this.tickNanos = Math.min(probeEveryNanos, TimeUnit.SECONDS.toNanos(1));
    // A driver's RPC port listens for the whole life of its SparkContext, so refusals that last
    // across a few probes mean the driver stopped (or crashed); a silent host waits appTimeout.
    this.refusedGraceNanos =
        Math.min(TimeUnit.MILLISECONDS.toNanos(timeoutMs), TimeUnit.SECONDS.toNanos(5));
    this.acceptor = new Thread(this::acceptLoop, "memwire-shuffle-service-accept");
    this.acceptor.setDaemon(true);
    this.liveness =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "memwire-shuffle-service-liveness");
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Starts a service: empties its directory, starts its transfer node and listens on its socket.
   *
   * @throws IllegalStateException when another service already listens on the socket
   * @throws IOException when the socket or the directory cannot be set up
   */
  public static ShuffleService start(ServiceConfig config) throws IOException {
    Path socket = config.socket();
    boolean onlySelf = config.allowedUsers().equals(Set.of(System.getProperty("user.name")));
    Files.createDirectories(socket.getParent());
    if (Files.exists(socket)) {
      if (answers(socket)) {
        throw new IllegalStateException("another shuffle service listens on " + socket);
      }
      Files.delete(socket); // left by a service that died
    }
    Path apps = config.dir().resolve("apps");
    if (Files.exists(apps)) {
      LOG.info("emptying {}: outputs of a previous run are not served again", apps);
      Application.deleteTree(apps);
    }
    Files.createDirectories(apps);
    TransferNode node = TransferNode.start(config.transfer());
    ServerSocketChannel server;
    try {
      server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      server.bind(UnixDomainSocketAddress.of(socket), 128);
      Files.setPosixFilePermissions(
          socket, PosixFilePermissions.fromString(onlySelf ? "rw-------" : "rw-rw-rw-"));
    } catch (IOException | RuntimeException e) {
      node.close();
      throw e;
    }
    ShuffleService s = new ShuffleService(config, node, server);
    s.acceptor.start();
    long tick = TimeUnit.NANOSECONDS.toMillis(s.tickNanos);
    s.liveness.scheduleWithFixedDelay(s::probeDrivers, tick, tick, TimeUnit.MILLISECONDS);
    LOG.info(
        "Memwire shuffle service: socket {}, outputs in {}, provider {} because {}; endpoint {}; "
            + "applications end {} ms after their driver stops answering, {} ms after its port "
            + "starts refusing connections",
        socket,
        config.dir(),
        node.provider(),
        node.selectionReason(),
        node.localAddress(),
        config.appTimeout().toMillis(),
        TimeUnit.NANOSECONDS.toMillis(s.refusedGraceNanos));
    return s;
  }

  private static boolean answers(Path socket) {
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(socket));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** The socket executors connect to. */
  public Path socket() {
    return config.socket();
  }

  /** The transfer node reducers read from. */
  public TransferNode node() {
    return node;
  }

  boolean isClosed() {
    return closed;
  }

  private void acceptLoop() {
    long backoff = 100;
    while (!closed) {
      SocketChannel ch;
      try {
        ch = server.accept();
        backoff = 100;
      } catch (ClosedChannelException e) {
        return;
      } catch (IOException e) {
        // Out of descriptors, say: keep the listener, try again later.
        LOG.warn("shuffle service: accept failed ({}); retrying in {} ms", e.toString(), backoff);
        sleepQuietly(backoff);
        backoff = Math.min(2000, backoff * 2);
        continue;
      }
      try {
        admit(ch);
      } catch (IOException | RuntimeException e) {
        LOG.debug("shuffle service: client dropped at admission: {}", e.toString());
        closeQuietly(ch);
      }
    }
  }

  private void admit(SocketChannel ch) throws IOException {
    UnixDomainPrincipal peer = ch.getOption(ExtendedSocketOptions.SO_PEERCRED);
    String user = peer.user().getName();
    String refusal = null;
    int code = 0;
    if (!config.allows(user)) {
      refusal = "user " + user + " may not use this shuffle service";
      code = ServiceProtocol.E_DENIED;
    } else if (sessions.size() >= config.maxClients()) {
      refusal = "the shuffle service serves " + config.maxClients() + " clients already";
      code = ServiceProtocol.E_NO_CAPACITY;
    }
    if (refusal != null) {
      clientsRefused.increment();
      LOG.warn("shuffle service: refused a client: {}", refusal);
      ch.configureBlocking(false); // never block the acceptor on a client that does not read
      ch.write(new ServiceProtocol.Out(ServiceProtocol.ERROR).u8(code).str(refusal).frame());
      // Take what the client sent already: closing with unread bytes would reset the connection
      // before the client reads the refusal.
      ch.read(ByteBuffer.allocate(ServiceProtocol.MAX_FRAME));
      ch.close();
      return;
    }
    ClientSession s = new ClientSession(this, ch, user);
    sessions.add(s);
    if (closed) {
      sessionEnded(s);
      return;
    }
    Thread t = new Thread(s, "memwire-shuffle-service-client-" + SESSIONS.incrementAndGet());
    t.setDaemon(true);
    t.start();
  }

  void sessionEnded(ClientSession s) {
    sessions.remove(s);
    closeQuietly(s.channel());
  }

  /** Registers (or re-joins) an application; null when it is registered with another token. */
  Application register(String application, byte[] token, InetSocketAddress driver) {
    long now = System.nanoTime();
    Application a =
        apps.computeIfAbsent(
            application, k -> new Application(k, token, appsDir.resolve(k), driver, now));
    if (!a.tokenMatches(token)) {
      return null;
    }
    a.driver(driver);
    a.alive(now);
    return a;
  }

  DirectoryPointer publish(
      Application app,
      String executor,
      String user,
      int shuffleId,
      int mapIndex,
      long mapId,
      Path index,
      Path data)
      throws Refused {
    if (closed) {
      throw new Refused(ServiceProtocol.E_CLOSED, "the shuffle service is stopping");
    }
    OutputFiles.Linked linked;
    try {
      linked = OutputFiles.take(shuffleId, mapId, index, data, app.dir.resolve(executor), user);
    } catch (OutputFiles.OutputRefused e) {
      outputsRefused.increment();
      throw new Refused(ServiceProtocol.E_BAD_OUTPUT, e.getMessage());
    }
    MemoryRegion indexRegion = null;
    MemoryRegion dataRegion = null;
    try {
      indexRegion = node.register(linked.index(), 0, linked.indexLength());
      if (linked.dataLength() > 0) {
        dataRegion = node.register(linked.data(), 0, linked.dataLength());
      }
      if (!DirectorySlot.fits(
          indexRegion.remote(), dataRegion == null ? null : dataRegion.remote())) {
        throw new RegistrationException(
            "data file of "
                + linked.dataLength()
                + " bytes needs more segments than a directory slot holds; raise "
                + ServiceConfig.TRANSFER_PREFIX
                + "maxSegmentSize");
      }
      ShuffleDirectory dir = app.directory(executor, node, directories);
      MemoryRegion i = indexRegion;
      MemoryRegion d = dataRegion;
      indexRegion = null; // the directory owns them from here, even when publish throws
      dataRegion = null;
      DirectoryPointer p = dir.publish(shuffleId, mapIndex, mapId, i, d);
      if (!app.addFiles(shuffleId, linked)) {
        throw new IllegalStateException("application " + app.key + " has ended");
      }
      outputsTaken.increment();
      return p;
    } catch (IOException | RuntimeException e) {
      if (dataRegion != null) {
        dataRegion.close();
      }
      if (indexRegion != null) {
        indexRegion.close();
      }
      OutputFiles.deleteQuietly(linked.index());
      OutputFiles.deleteQuietly(linked.data());
      outputsRefused.increment();
      int code =
          e instanceof RegistrationException
              ? ServiceProtocol.E_NO_CAPACITY
              : e instanceof IllegalStateException
                  ? ServiceProtocol.E_CLOSED
                  : ServiceProtocol.E_BAD_OUTPUT;
      throw new Refused(code, "cannot register map output " + mapId + ": " + e.getMessage());
    }
  }

  void removeShuffle(Application app, int shuffleId) {
    int n = app.removeShuffle(shuffleId);
    if (n > 0) {
      shufflesRemoved.increment();
      LOG.debug("shuffle {} of {} removed: {} outputs", shuffleId, app.key, n);
    }
  }

  /**
   * Ends every attempt of an application now (as YARN's stopApplication does): outputs deregistered
   * and deleted. Returns the number of attempts ended.
   */
  public int endApplication(String applicationId) {
    int n = 0;
    for (Application a : new ArrayList<>(apps.values())) {
      if (a.key.equals(applicationId) || a.key.startsWith(applicationId + "_")) {
        end(a, "ended by its cluster manager");
        n++;
      }
    }
    return n;
  }

  private void end(Application a, String why) {
    long[] held = a.held();
    if (!a.end()) {
      return; // ended by another thread
    }
    // Only now: a registration meanwhile joined the ended application (and was refused), never a
    // new one whose directory the cleanup above could have deleted.
    apps.remove(a.key, a);
    applicationsEnded.increment();
    LOG.info(
        "application {} {}: {} map outputs ({} bytes) deregistered and deleted",
        a.key,
        why,
        held[0],
        held[1]);
  }

  private void probeDrivers() {
    int timeout = (int) Math.min(2000, Math.max(100, config.appTimeout().toMillis() / 4));
    for (Application a : new ArrayList<>(apps.values())) {
      if (closed) {
        return;
      }
      if (System.nanoTime() < a.nextProbeNanos()) {
        continue;
      }
      Application.Probe probe = a.probe(timeout);
      long now = System.nanoTime();
      if (probe == Application.Probe.ANSWERS) {
        a.alive(now);
      }
      if (probe != Application.Probe.REFUSED) {
        a.refusedSince(0);
        a.nextProbe(now + probeEveryNanos);
      } else if (a.refusedSinceNanos() == 0) {
        a.refusedSince(now);
        a.nextProbe(now + tickNanos); // confirm soon: a refused port is a driver that is gone
      } else if (now - a.refusedSinceNanos() >= refusedGraceNanos) {
        end(a, "is over: its driver's RPC port " + driverOf(a) + " refuses connections");
        continue;
      } else {
        a.nextProbe(now + tickNanos);
      }
      if (now - a.lastAliveNanos() > config.appTimeout().toNanos()) {
        end(
            a,
            "is over: its driver at "
                + driverOf(a)
                + " has not accepted a connection for "
                + config.appTimeout().toMillis()
                + " ms");
      }
    }
  }

  private static String driverOf(Application a) {
    return a.driver().getHostString() + ":" + a.driver().getPort();
  }

  /** The service's counters and its transfer node's ({@code node.*}). */
  public Map<String, Long> stats() {
    Map<String, Long> m = new LinkedHashMap<>();
    long outputs = 0;
    long bytes = 0;
    for (Application a : apps.values()) {
      long[] h = a.held();
      outputs += h[0];
      bytes += h[1];
    }
    m.put("applications", (long) apps.size());
    m.put("clients", (long) sessions.size());
    m.put("outputsHeld", outputs);
    m.put("bytesHeld", bytes);
    m.put("outputsTaken", outputsTaken.sum());
    m.put("outputsRefused", outputsRefused.sum());
    m.put("clientsRefused", clientsRefused.sum());
    m.put("applicationsEnded", applicationsEnded.sum());
    m.put("shufflesRemoved", shufflesRemoved.sum());
    m.put("directoryBytes", directories.allocatedBytes());
    node.stats().asMap().forEach((k, v) -> m.put("node." + k, v));
    return m;
  }

  /** Waits until {@link #close} ran. */
  public void awaitStop() throws InterruptedException {
    stopped.await();
  }

  /**
   * Stops accepting, closes every client, ends every application (its files deleted), closes the
   * transfer node and removes the socket. Idempotent.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    try {
      closeQuietly(server);
      join(acceptor);
      for (ClientSession s : new ArrayList<>(sessions)) {
        closeQuietly(s.channel());
      }
      liveness.shutdownNow();
      try {
        liveness.awaitTermination(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      for (Application a : new ArrayList<>(apps.values())) {
        end(a, "ended: the shuffle service stops");
      }
      directories.close();
      node.close();
      try {
        Files.deleteIfExists(config.socket());
      } catch (IOException ignored) {
        // the next start removes it
      }
    } finally {
      stopped.countDown();
    }
  }

  private static void join(Thread t) {
    try {
      t.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void closeQuietly(java.io.Closeable c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // closing only
    }
  }
}
