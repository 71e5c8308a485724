package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.service.protocol.ServiceProtocol;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.RegisteredAllocator;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
 * <p>It trusts nothing a client names: its directories are checked or created private at start
 * ({@link TrustedPaths}); a handed-over file is looked up without following links and the inode it
 * links is the one it checked ({@link OutputFiles}); applications are keyed by the connecting user
 * and their id, bound to a token and to the driver address they first registered; connections,
 * applications, outputs and bytes are held to per-user and per-application quotas ({@link Quotas});
 * a connection that does not register, or stalls inside a frame, is closed ({@code
 * registerTimeout}, {@code frameTimeout}).
 *
 * <p>An application's outputs go when Spark removes a shuffle (any executor of the application
 * forwards {@code unregisterShuffle}), when its driver's RPC port refuses TCP connections for 5 s
 * (application end, driver crash) or does not answer for {@code appTimeout} (host gone), when
 * {@link #endApplication} is called (YARN's stopApplication), or when the service stops. Drivers
 * are probed all at once, each probe bounded ({@link DriverProbes}), so no application's end waits
 * on another's. A restarted service starts empty with new keys: readers holding old descriptors get
 * remote-access errors, so Spark reruns the map stage, never reads stale bytes.
 *
 * <p>Threads (all daemons, joined by {@link #close}): {@code memwire-shuffle-service-accept}
 * accepts executors; {@code memwire-shuffle-service-client-N} serves one executor each; {@code
 * memwire-shuffle-service-liveness} probes drivers and ends applications; {@code
 * memwire-shuffle-service-deadlines} closes connections past their deadlines; with {@code
 * http.port} set, {@code memwire-shuffle-service-http-N} answer {@code /metrics} and {@code
 * /health} and the JDK's {@code HTTP-Dispatcher} accepts their connections ({@link ServiceHttp}).
 */
public final class ShuffleService implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleService.class);
  private static final AtomicInteger SESSIONS = new AtomicInteger();

  /** Open files and memory mappings kept free for everything but held outputs. */
  private static final long RESERVED_FILES = 1024;

  private static final long RESERVED_MAPPINGS = 4096;

  private final ServiceConfig config;
  private final TransferNode node;
  private final RegisteredAllocator directories;
  private final ServerSocketChannel server;
  private final Path appsDir;
  private final Quotas quotas;
  private final Map<Application.Key, Application> apps = new ConcurrentHashMap<>();
  private final Set<ClientSession> sessions = ConcurrentHashMap.newKeySet();
  private final Thread acceptor;
  private final ScheduledExecutorService liveness;
  private final ScheduledExecutorService deadlines;
  private final AtomicLong linkIds = new AtomicLong();

  /** How often a driver that answers is probed. */
  private final long probeEveryNanos;

  /** The liveness thread's period; also how soon a refused probe is repeated. */
  private final long tickNanos;

  /** How long a driver's port must refuse every probe before its application ends. */
  private final long refusedGraceNanos;

  private final CountDownLatch stopped = new CountDownLatch(1);
  private final LongAdder outputsTaken = new LongAdder();
  private final LongAdder outputsRefused = new LongAdder();
  private final LongAdder outputsReplaced = new LongAdder();
  private final LongAdder clientsRefused = new LongAdder();
  private final LongAdder clientsTimedOut = new LongAdder();
  private final LongAdder applicationsEnded = new LongAdder();
  private final LongAdder shufflesRemoved = new LongAdder();
  private final LongAdder driverProbes = new LongAdder();
  private final Map<String, LongAdder> refusals = new ConcurrentHashMap<>();
  private final long maxOutputs;
  private volatile boolean closed;

  /** True once the service accepts outputs, until {@link #close} begins. */
  private volatile boolean ready;

  /** The HTTP endpoint ({@link ServiceHttp}), or null when {@code http.port} is unset. */
  private volatile AutoCloseable http;

  private volatile int httpPort = -1;

  /** Runs in {@link #close} once the service is no longer ready (tests observe /health there). */
  volatile Runnable whileClosing = () -> {};

  /**
   * Why requests were refused, besides the quota keys {@link Quotas} counts: a user not in
   * allowedUsers, an output the service would not take, the transfer node's registration budget, a
   * service that is stopping, a registration with another token or driver (or an unresolvable one).
   */
  static final List<String> REFUSAL_REASONS =
      List.of("userNotAllowed", "badOutput", "registrationBudget", "stopping", "registration");

  /** A request the service refuses, with the protocol's error code. */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    final int code;

    Refused(int code, String message) {
      super(message);
      this.code = code;
    }
  }

  private ShuffleService(
      ServiceConfig config, TransferNode node, ServerSocketChannel server, long maxOutputs) {
    this.config = config;
    this.node = node;
    this.server = server;
    this.directories = node.memory().newChild(ShuffleDirectory.ALLOCATOR);
    this.maxOutputs = maxOutputs;
    for (String r : REFUSAL_REASONS) {
      refusals.put(r, new LongAdder());
    }
    this.appsDir = config.dir().resolve("apps");
    ServiceConfig.Quota n = config.nodeQuota();
    this.quotas =
        new Quotas(
            new ServiceConfig.Quota(n.clients(), maxOutputs, n.bytes()),
            config.userQuota(),
            config.applicationQuota(),
            config.maxApplicationsPerUser());
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
    this.liveness = daemonScheduler("memwire-shuffle-service-liveness");
    this.deadlines = daemonScheduler("memwire-shuffle-service-deadlines");
  }

  private static ScheduledExecutorService daemonScheduler(String name) {
    return Executors.newSingleThreadScheduledExecutor(
        r -> {
          Thread t = new Thread(r, name);
          t.setDaemon(true);
          return t;
        });
  }

  /**
   * Starts a service: checks (or creates) its private directories and empties its output directory,
   * starts its transfer node and listens on its socket.
   *
   * @throws IllegalStateException when another service already listens on the socket
   * @throws IOException when the socket or the directory cannot be set up, or cannot be trusted
   *     (another user owns or may change a directory on the way; the message names it)
   */
  public static ShuffleService start(ServiceConfig config) throws IOException {
    Path socket = config.socket();
    // Outputs: only the service. Socket: other users must reach it when they may connect.
    TrustedPaths.prepareDirectory(
        config.dir(),
        PosixFilePermissions.fromString("rwx------"),
        ServiceConfig.PREFIX + ServiceConfig.DIR.name());
    TrustedPaths.prepareDirectory(
        socket.getParent(),
        PosixFilePermissions.fromString(config.multiUser() ? "rwxr-xr-x" : "rwx------"),
        ServiceConfig.PREFIX + ServiceConfig.SOCKET.name());
    if (Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
      if (answers(socket)) {
        throw new IllegalStateException("another shuffle service listens on " + socket);
      }
      Files.delete(socket); // left by a service that died; its directory is the service's own
    }
    Path apps = config.dir().resolve("apps");
    TrustedPaths.prepareDirectory(
        apps,
        PosixFilePermissions.fromString("rwx------"),
        ServiceConfig.PREFIX + ServiceConfig.DIR.name());
    LOG.info("emptying {}: outputs of a previous run are not served again", apps);
    TrustedPaths.emptyDirectory(apps);
    long maxOutputs = fitOutputs(config.nodeQuota().outputs());
    TransferNode node = TransferNode.start(config.transfer());
    ServerSocketChannel server;
    try {
      server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      server.bind(UnixDomainSocketAddress.of(socket), 128);
      Files.setPosixFilePermissions(
          socket, PosixFilePermissions.fromString(config.multiUser() ? "rw-rw-rw-" : "rw-------"));
    } catch (IOException | RuntimeException e) {
      node.close();
      throw e;
    }
    ShuffleService s = new ShuffleService(config, node, server, maxOutputs);
    s.acceptor.start();
    long tick = TimeUnit.NANOSECONDS.toMillis(s.tickNanos);
    s.liveness.scheduleWithFixedDelay(s::probeDrivers, tick, tick, TimeUnit.MILLISECONDS);
    s.deadlines.scheduleWithFixedDelay(s::enforceDeadlines, 100, 100, TimeUnit.MILLISECONDS);
    if (config.httpPort().isPresent()) {
      try {
        ServiceHttp h = ServiceHttp.start(s, config.httpHost(), config.httpPort().getAsInt());
        s.http = h;
        s.httpPort = h.port();
      } catch (IOException | RuntimeException e) {
        s.close();
        throw e;
      } catch (LinkageError e) {
        s.close();
        String key = ServiceConfig.PREFIX + ServiceConfig.HTTP_PORT.name();
        throw new TransferConfigException(
            TransferConfigException.Problem.UNUSABLE,
            key,
            key
                + " is set but the Prometheus client is not on the classpath ("
                + e
                + "): run the service with bin/memwire, or put shuffle-service/target/service-lib/"
                + "*.jar on its classpath, or leave the key unset");
      }
    }
    // Ready from here: recovery of a previous run's outputs (not yet) will run before this.
    s.ready = true;
    LOG.info(
        "Memwire shuffle service: socket {}, outputs in {}, provider {} because {}; endpoint {}; "
            + "applications end {} ms after their driver stops answering, {} ms after its port "
            + "starts refusing connections; at most {} outputs held; per user {}, per "
            + "application {}",
        socket,
        config.dir(),
        node.provider(),
        node.selectionReason(),
        node.localAddress(),
        config.appTimeout().toMillis(),
        TimeUnit.NANOSECONDS.toMillis(s.refusedGraceNanos),
        maxOutputs,
        config.userQuota(),
        config.applicationQuota());
    if (s.httpPort >= 0) {
      LOG.info(
          "shuffle service HTTP endpoint on {}:{}: /metrics, /health, /health/ready",
          config.httpHost(),
          s.httpPort);
    }
    return s;
  }

  /**
   * Lowers the configured output limit to what this process's open-file limit and the kernel's
   * mapping limit leave room for: each held output keeps two files open and two mappings.
   */
  static long fitOutputs(long configured) {
    long fit = configured;
    String why = null;
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.UnixOperatingSystemMXBean os) {
      long byFiles = (os.getMaxFileDescriptorCount() - RESERVED_FILES) / 2;
      if (byFiles < fit) {
        fit = Math.max(1, byFiles);
        why = "the open-file limit of " + os.getMaxFileDescriptorCount();
      }
    }
    // Not Files.readString: it trusts the size procfs reports and may return part of the line.
    try (java.io.BufferedReader r =
        Files.newBufferedReader(Path.of("/proc/sys/vm/max_map_count"))) {
      long maps = Long.parseLong(String.valueOf(r.readLine()).trim());
      long byMaps = (maps - RESERVED_MAPPINGS) / 2;
      if (byMaps < fit) {
        fit = Math.max(1, byMaps);
        why = "vm.max_map_count " + maps;
      }
    } catch (IOException | NumberFormatException e) {
      LOG.debug("cannot read vm.max_map_count: {}", e.toString());
    }
    if (why != null) {
      LOG.info(
          "at most {} map outputs held (not {}): each keeps two files open and two mappings, and "
              + "{} leaves room for no more; raise it to hold more",
          fit,
          configured,
          why);
    }
    return fit;
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

  ServiceConfig config() {
    return config;
  }

  Quotas quotas() {
    return quotas;
  }

  boolean isClosed() {
    return closed;
  }

  /** True while the service accepts outputs: started and not stopping (/health/ready). */
  public boolean isReady() {
    return ready && !closed;
  }

  /**
   * True while the process serves executors: its accept thread runs, or it is starting or stopping
   * on purpose (/health); false only when the accept thread died while the service should serve.
   */
  public boolean isLive() {
    return closed || !ready || acceptor.isAlive();
  }

  /** The port of the HTTP endpoint, or -1 when it is off ({@code http.port} unset). */
  public int httpPort() {
    return httpPort;
  }

  private void refused(String reason) {
    refusals.get(reason).increment();
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
    UserPrincipal user = peer.user();
    String refusal;
    int code;
    if (!config.allows(user.getName())) {
      refusal = "user " + user.getName() + " may not use this shuffle service";
      code = ServiceProtocol.E_DENIED;
      refused("userNotAllowed");
      LOG.warn("shuffle service: refused a client: {}", refusal);
    } else {
      refusal = quotas.takeClient(user);
      code = ServiceProtocol.E_NO_CAPACITY;
    }
    if (refusal != null) {
      clientsRefused.increment();
      ch.configureBlocking(false); // never block the acceptor on a client that does not read
      ch.write(new ServiceProtocol.Out(ServiceProtocol.ERROR).u8(code).str(refusal).frame());
      // Take what the client sent already: closing with unread bytes would reset the connection
      // before the client reads the refusal.
      ch.read(ByteBuffer.allocate(ServiceProtocol.MAX_FRAME));
      ch.close();
      return;
    }
    ClientSession s =
        new ClientSession(this, ch, user, System.nanoTime() + config.registerTimeout().toNanos());
    sessions.add(s);
    if (closed) {
      sessionEnded(s);
      return;
    }
    try {
      Thread t = new Thread(s, "memwire-shuffle-service-client-" + SESSIONS.incrementAndGet());
      t.setDaemon(true);
      t.start();
    } catch (RuntimeException | Error e) {
      sessionEnded(s); // its slot goes back; the acceptor goes on
      throw new IllegalStateException("cannot start a client thread: " + e, e);
    }
  }

  void sessionEnded(ClientSession s) {
    if (sessions.remove(s)) {
      quotas.returnClient(s.user());
    }
    closeQuietly(s.channel());
  }

  private void enforceDeadlines() {
    long now = System.nanoTime();
    for (ClientSession s : sessions) {
      String overdue = s.overdue(now);
      if (overdue != null) {
        clientsTimedOut.increment();
        LOG.debug("shuffle service: closed a connection of {}: {}", s.user().getName(), overdue);
        closeQuietly(s.channel()); // its thread sees the close and ends the session
      }
    }
  }

  /**
   * Registers (or re-joins) an application of {@code user}.
   *
   * @throws Refused when the id is registered with another token or driver, the driver's host
   *     cannot be resolved, or the user holds its quota of applications
   */
  Application register(UserPrincipal user, String id, byte[] token, String driverHost, int port)
      throws Refused {
    Application.Key key = new Application.Key(user, id);
    Application a = apps.get(key);
    if (a == null) {
      InetSocketAddress driver;
      try {
        driver = new InetSocketAddress(InetAddress.getByName(driverHost), port);
      } catch (UnknownHostException | SecurityException e) {
        refused("registration");
        throw new Refused(
            ServiceProtocol.E_BAD_REQUEST, "cannot resolve the driver's host " + driverHost);
      }
      String refusal = quotas.takeApplication(user, id);
      if (refusal != null) {
        throw new Refused(ServiceProtocol.E_QUOTA, refusal);
      }
      String userName = user.getName();
      String safeUser = userName.replaceAll("[^A-Za-z0-9._-]", "_");
      Path dir =
          appsDir.resolve(
              id
                  + "@"
                  + safeUser
                  + (safeUser.equals(userName) ? "" : "-" + linkIds.incrementAndGet()));
      Application created = new Application(key, token, dir, driver, System.nanoTime());
      a = apps.putIfAbsent(key, created);
      if (a == null) {
        a = created;
        LOG.debug("application {} registered, driver {}", key, driver);
      } else {
        quotas.returnApplication(user); // another executor registered it first
      }
    }
    if (!a.tokenMatches(token)) {
      refused("registration");
      throw new Refused(
          ServiceProtocol.E_DENIED, "application " + id + " is registered with another token");
    }
    if (!a.driver().getHostString().equals(driverHost) && !sameAddress(a.driver(), driverHost)
        || a.driver().getPort() != port) {
      refused("registration");
      throw new Refused(
          ServiceProtocol.E_DENIED,
          "application " + id + " is registered with another driver address (" + driverOf(a) + ")");
    }
    a.alive(System.nanoTime());
    return a;
  }

  private static boolean sameAddress(InetSocketAddress resolved, String host) {
    return resolved.getAddress() != null && resolved.getAddress().getHostAddress().equals(host);
  }

  DirectoryPointer publish(
      Application app,
      String executor,
      int shuffleId,
      int mapIndex,
      long mapId,
      Path index,
      Path data)
      throws Refused {
    if (closed) {
      refused("stopping");
      throw new Refused(ServiceProtocol.E_CLOSED, "the shuffle service is stopping");
    }
    Application.Held before = app.held(executor, shuffleId, mapIndex);
    if (before != null && before.mapId() == mapId) {
      return before.pointer(); // the same task attempt again: nothing new to take
    }
    UserPrincipal user = app.key.user();
    OutputFiles.Linked linked;
    try {
      linked =
          OutputFiles.take(
              shuffleId,
              mapId,
              index,
              data,
              app.dir.resolve(executor),
              user,
              linkIds.incrementAndGet());
    } catch (OutputFiles.OutputRefused e) {
      outputsRefused.increment();
      refused("badOutput");
      throw new Refused(ServiceProtocol.E_BAD_OUTPUT, e.getMessage());
    }
    String overQuota = quotas.takeOutput(user, app.key, app.key.id(), linked.bytes());
    if (overQuota != null) {
      OutputFiles.deleteQuietly(linked.index());
      OutputFiles.deleteQuietly(linked.data());
      outputsRefused.increment();
      throw new Refused(ServiceProtocol.E_QUOTA, overQuota);
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
      Application.Held replaced =
          app.put(executor, shuffleId, mapIndex, new Application.Held(mapId, linked, p));
      if (replaced != null) {
        // The directory closed its regions when the slot moved on; its files and quota go now.
        Application.deleteFiles(List.of(replaced));
        quotas.returnOutput(user, app.key, replaced.files().bytes());
        outputsReplaced.increment();
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
      // Not recorded in the application (refused, or it ended meanwhile and its directory closed
      // the regions): the files and the quota go here.
      OutputFiles.deleteQuietly(linked.index());
      OutputFiles.deleteQuietly(linked.data());
      quotas.returnOutput(user, app.key, linked.bytes());
      outputsRefused.increment();
      int code =
          e instanceof RegistrationException
              ? ServiceProtocol.E_NO_CAPACITY
              : e instanceof IllegalStateException
                  ? ServiceProtocol.E_CLOSED
                  : ServiceProtocol.E_BAD_OUTPUT;
      refused(
          code == ServiceProtocol.E_NO_CAPACITY
              ? "registrationBudget"
              : code == ServiceProtocol.E_CLOSED ? "stopping" : "badOutput");
      throw new Refused(code, "cannot register map output " + mapId + ": " + e.getMessage());
    }
  }

  void removeShuffle(Application app, int shuffleId) {
    List<Application.Held> gone = app.removeShuffle(shuffleId);
    release(app, gone);
    if (!gone.isEmpty()) {
      shufflesRemoved.increment();
      LOG.debug("shuffle {} of {} removed: {} outputs", shuffleId, app.key, gone.size());
    }
  }

  private void release(Application app, List<Application.Held> gone) {
    Application.deleteFiles(gone);
    for (Application.Held h : gone) {
      quotas.returnOutput(app.key.user(), app.key, h.files().bytes());
    }
  }

  /**
   * Ends every attempt of an application now, whichever user registered it (as YARN's
   * stopApplication does): outputs deregistered and deleted. Returns the number of attempts ended.
   */
  public int endApplication(String applicationId) {
    int n = 0;
    for (Application a : new ArrayList<>(apps.values())) {
      String id = a.key.id();
      if (id.equals(applicationId) || id.startsWith(applicationId + "_")) {
        end(a, "ended by its cluster manager");
        n++;
      }
    }
    return n;
  }

  private void end(Application a, String why) {
    long[] held = a.held();
    List<Application.Held> gone = a.end();
    if (gone == null) {
      return; // ended by another thread
    }
    // Only now: a registration meanwhile joined the ended application (and was refused), never a
    // new one whose directory the cleanup above could have deleted.
    apps.remove(a.key, a);
    for (Application.Held h : gone) {
      quotas.returnOutput(a.key.user(), a.key, h.files().bytes());
    }
    quotas.returnApplication(a.key.user());
    applicationsEnded.increment();
    LOG.info(
        "application {} {}: {} map outputs ({} bytes) deregistered and deleted",
        a.key,
        why,
        held[0],
        held[1]);
  }

  private void probeDrivers() {
    try {
      probeDriversOnce();
    } catch (IOException | RuntimeException e) {
      LOG.warn("shuffle service: driver probes failed this round: {}", e.toString());
    }
  }

  private void probeDriversOnce() throws IOException {
    long start = System.nanoTime();
    Map<Application, InetSocketAddress> due = new LinkedHashMap<>();
    for (Application a : apps.values()) {
      if (start - a.nextProbeNanos() >= 0) {
        due.put(a, a.driver());
      }
    }
    if (due.isEmpty() || closed) {
      return;
    }
    long timeout = Math.min(2000, Math.max(100, config.appTimeout().toMillis() / 4));
    Map<Application, DriverProbes.Result> results = DriverProbes.probe(due, timeout);
    driverProbes.add(results.size());
    long now = System.nanoTime();
    for (Map.Entry<Application, DriverProbes.Result> r : results.entrySet()) {
      if (closed) {
        return;
      }
      Application a = r.getKey();
      DriverProbes.Result probe = r.getValue();
      if (probe == DriverProbes.Result.ANSWERS) {
        a.alive(now);
      }
      if (probe != DriverProbes.Result.REFUSED) {
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

  /**
   * The service's counters and its transfer node's ({@code node.*}); {@code refusals.<reason>}
   * counts refusals by reason (a quota's key or one of {@link #REFUSAL_REASONS}). {@link
   * ServiceMetrics} exports them.
   */
  public Map<String, Long> stats() {
    Map<String, Long> m = new LinkedHashMap<>();
    long[] held = quotas.held();
    long now = System.nanoTime();
    long lag = 0;
    for (Application a : apps.values()) {
      lag = Math.max(lag, now - a.lastAliveNanos());
    }
    m.put("ready", isReady() ? 1L : 0L);
    m.put("applications", (long) apps.size());
    m.put("clients", (long) sessions.size());
    m.put("outputsHeld", held[0]);
    m.put("bytesHeld", held[1]);
    m.put("outputsTaken", outputsTaken.sum());
    m.put("outputsRefused", outputsRefused.sum());
    m.put("outputsReplaced", outputsReplaced.sum());
    m.put("quotaRefusals", quotas.refusals());
    m.put("clientsRefused", clientsRefused.sum());
    m.put("clientsTimedOut", clientsTimedOut.sum());
    m.put("applicationsEnded", applicationsEnded.sum());
    m.put("shufflesRemoved", shufflesRemoved.sum());
    m.put("driverProbes", driverProbes.sum());
    m.put("directoryBytes", directories.allocatedBytes());
    m.put("maxOutputs", maxOutputs);
    m.put("registrationBudget", config.transfer().registrationBudget());
    m.put("cleanupLagMillis", TimeUnit.NANOSECONDS.toMillis(lag));
    refusals.forEach((k, v) -> m.put("refusals." + k, v.sum()));
    quotas.refusalsByLimit().forEach((k, v) -> m.put("refusals." + k, v));
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
      try {
        whileClosing.run();
      } catch (RuntimeException e) {
        LOG.debug("shuffle service: closing hook failed: {}", e.toString());
      }
      closeQuietly(server);
      join(acceptor);
      for (ClientSession s : new ArrayList<>(sessions)) {
        closeQuietly(s.channel());
      }
      for (ScheduledExecutorService e : List.of(liveness, deadlines)) {
        e.shutdownNow();
        try {
          e.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
        }
      }
      for (Application a : new ArrayList<>(apps.values())) {
        end(a, "ended: the shuffle service stops");
      }
      directories.close();
      node.close();
      AutoCloseable h = http;
      if (h != null) {
        try {
          h.close(); // its threads joined, its port free
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (Exception e) {
          LOG.warn("shuffle service: closing the HTTP endpoint failed: {}", e.toString());
        }
      }
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
