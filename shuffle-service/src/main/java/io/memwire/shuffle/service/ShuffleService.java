package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
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
 * <p>An application's outputs go when Spark removes a shuffle, when its driver stops answering
 * ({@link DriverLiveness}), when {@link #endApplication} is called (YARN), or when the service
 * stops. With {@code recoveryPath} set it records what it owns ({@link RocksRecoveryStore}), keeps
 * it when it stops, takes back at start, under new keys, what still passes its checks ({@link
 * Recovery}), and with {@code resolvePort} answers readers' old pointers ({@link PointerResolver}).
 *
 * <p>Threads (all daemons, joined by {@link #close}): {@code memwire-shuffle-service-accept}
 * accepts executors; {@code memwire-shuffle-service-client-N} serves one executor each; {@code
 * memwire-shuffle-service-liveness} probes drivers and ends applications; {@code
 * memwire-shuffle-service-deadlines} closes connections past their deadlines; with {@code
 * http.port} set, {@code memwire-shuffle-service-http} accepts and answers {@code /metrics} and
 * {@code /health} ({@link ServiceHttp}); with {@code resolvePort} set, {@link ResolveListener}'s.
 */
public final class ShuffleService implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleService.class);

  /** Prefix of the transfer node's counters in {@link #stats()}. */
  static final String NODE_PREFIX = "node.";

  /**
   * Where the service is in its life; it only moves forward, each step a compare-and-set, so
   * whatever thread calls what, each step's work runs once.
   */
  public enum State {
    /** Directories, store, node and socket set up; not serving executors yet. */
    STARTING,
    /** Taking back what a previous run recorded (recoveryPath); not serving yet. */
    RECOVERING,
    /** Serving executors and accepting outputs (/health/ready 200). */
    READY,
    /** {@link #close} is under way: nothing new taken, everything being released. */
    CLOSING,
    /** Closed: every thread joined, every region deregistered, the node closed. */
    CLOSED;

    /** True once {@link #close} has begun. */
    boolean stopping() {
      return this == CLOSING || this == CLOSED;
    }
  }

  private final ServiceConfig config;
  private final TransferNode node;
  private final ByteQuotas bytes;
  private final ServerSocketChannel server;
  private final Path appsDir;
  private final Quotas quotas;
  private final ClientAcceptor clients;
  private final PeriodicTasks periodic = new PeriodicTasks();
  private final AtomicLong linkIds = new AtomicLong();

  private final ServiceCounters counters = new ServiceCounters();
  private final Applications applications;
  private final DriverLiveness drivers;
  private final OutputIntake intake;
  private final long maxOutputs;

  /** The one lifecycle state and who runs the close. */
  private final ServiceLifecycle lifecycle = new ServiceLifecycle();

  /** Builds {@link #stats()}. */
  private final StatsSnapshot statsSnapshot;

  /** The HTTP endpoint ({@link ServiceHttp}), or null when {@code http.port} is unset. */
  private volatile AutoCloseable http;

  private volatile int httpPort = -1;

  /** Old directory pointers of recovered outputs, answered on the resolve port. */
  private final PointerResolver resolver;

  /** The resolve port's listener, or null when {@code resolvePort} is unset. */
  private volatile ResolveListener resolve;

  /** Runs in {@link #close} once the service is no longer ready (tests observe /health there). */
  volatile Runnable whileClosing = () -> {};

  /** Where what the service owns is recorded ({@link RecoveryLog#NONE} with recovery off). */
  private final RecoveryLog log;

  /** Runs while the service recovers, before it is ready (tests observe /health there). */
  private final Consumer<ShuffleService> whileRecovering;

  ShuffleService(
      ServiceConfig config,
      TransferNode node,
      ServerSocketChannel server,
      long maxOutputs,
      RecoveryLog log,
      Consumer<ShuffleService> whileRecovering) {
    this.config = config;
    this.whileRecovering = whileRecovering;
    this.log = log;
    this.node = node;
    this.server = server;
    this.bytes =
        new ByteQuotas(
            node.memory(), config.userQuota().bytes(), config.applicationQuota().bytes());
    this.maxOutputs = maxOutputs;
    this.appsDir = config.dir().resolve("apps");
    this.quotas =
        new Quotas(
            config.nodeQuota().withOutputs(maxOutputs),
            config.userQuota(),
            config.applicationQuota(),
            config.maxApplicationsPerUser());
    this.applications = new Applications(appsDir, quotas, bytes, counters, linkIds, log);
    this.drivers = new DriverLiveness(applications, counters, config.appTimeout(), this::isClosed);
    this.resolver = new PointerResolver(counters);
    this.intake =
        new OutputIntake(node, bytes, quotas, counters, linkIds, this::isClosed, log, resolver);
    this.clients = new ClientAcceptor(this, server, config, quotas, counters, this::isClosed);
    this.statsSnapshot =
        new StatsSnapshot(
            lifecycle, config, node, applications, clients, quotas, counters, maxOutputs);
  }

  /**
   * Starts a service ({@link ServiceStart}): checks (or creates) its private directories, starts
   * its transfer node, takes back what its recovery store records, and serves its socket.
   *
   * @throws IllegalStateException when another service already listens on the socket
   * @throws IOException when the socket or the directory cannot be set up, or cannot be trusted
   *     (another user owns or may change a directory on the way; the message names it)
   */
  public static ShuffleService start(ServiceConfig config) throws IOException {
    return ServiceStart.start(config, s -> {});
  }

  /** As {@link #start(ServiceConfig)}, running {@code whileRecovering} before recovery (tests). */
  static ShuffleService start(ServiceConfig config, Consumer<ShuffleService> whileRecovering)
      throws IOException {
    return ServiceStart.start(config, whileRecovering);
  }

  /** Counts a start whose recovery store was lost. */
  void storeLost() {
    counters.recoveryStoreLost.increment();
  }

  PointerResolver resolver() {
    return resolver;
  }

  /** Attaches the resolve port's listener (closed with the service). */
  void resolve(ResolveListener l) {
    resolve = l;
  }

  /** The resolve port, or -1 when it is off ({@code resolvePort} unset). */
  public int resolvePort() {
    ResolveListener l = resolve;
    return l == null ? -1 : l.port();
  }

  /** Attaches the HTTP endpoint (closed with the service). */
  void http(ServiceHttp h) {
    http = h;
    httpPort = h.port();
  }

  /**
   * Starts serving once recovered: executors, driver probes, deadlines; ready from here. Returns
   * how long after its port starts refusing an application ends (ns), for the start's log line.
   */
  long serve() {
    // After recovery: /health/ready answers 200 from here. A close that came first wins.
    if (!lifecycle.move(State.STARTING, State.READY)) {
      throw new IllegalStateException("shuffle service closed while it started (" + state() + ")");
    }
    clients.start();
    periodic.start(drivers, clients);
    return drivers.refusedGraceNanos();
  }

  /** The most outputs held at once (maxOutputs as fitted at start). */
  long maxOutputs() {
    return maxOutputs;
  }

  /**
   * Takes back what a previous run recorded ({@link Recovery}); not ready meanwhile. A store that
   * cannot be read through is counted as lost: the service then starts empty.
   */
  void recover(RecoveryStores.Opened store) throws IOException {
    if (store.store() == null) {
      return;
    }
    if (!lifecycle.move(State.STARTING, State.RECOVERING)) {
      throw new IllegalStateException(
          "shuffle service closed before it recovered (" + state() + ")");
    }
    try {
      whileRecovering.accept(this);
      try {
        new Recovery(store.store(), appsDir, applications, intake, counters, linkIds).run();
      } catch (IOException e) {
        LOG.warn(
            "recovery store in {} cannot be read ({}): starting empty; readers of the previous "
                + "run's outputs get fetch failures and Spark reruns those map stages",
            config.recoveryPath().orElseThrow(),
            e.getMessage());
        counters.recoveryStoreLost.increment();
        applications.endAll("not recovered: the recovery store cannot be read");
        TrustedPaths.emptyDirectory(appsDir);
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    } finally {
      lifecycle.move(State.RECOVERING, State.STARTING);
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

  /** True once {@link #close} has begun (closing or closed). */
  boolean isClosed() {
    return lifecycle.stopping();
  }

  /** Where the service is in its life now. */
  public State state() {
    return lifecycle.get();
  }

  /** True while the service accepts outputs: started and not stopping (/health/ready). */
  public boolean isReady() {
    return lifecycle.get() == State.READY;
  }

  /**
   * True while the process serves executors: its accept thread runs, or it is starting or stopping
   * on purpose (/health); false only when the accept thread died while the service should serve.
   */
  public boolean isLive() {
    return lifecycle.get() != State.READY || clients.isAlive() || !clients.started();
  }

  /** The port of the HTTP endpoint, or -1 when it is off ({@code http.port} unset). */
  public int httpPort() {
    return httpPort;
  }

  void sessionEnded(ClientSession s) {
    clients.sessionEnded(s);
  }

  /** See {@link Applications#register}. */
  Application register(UserPrincipal user, String id, byte[] token, String driverHost, int port)
      throws Refused {
    return applications.register(user, id, token, driverHost, port);
  }

  /** See {@link OutputIntake#publish}. */
  DirectoryPointer publish(
      Application app,
      String executor,
      int shuffleId,
      int mapIndex,
      long mapId,
      Path index,
      Path data,
      Path checksums)
      throws Refused {
    return intake.publish(app, executor, shuffleId, mapIndex, mapId, index, data, checksums);
  }

  void removeShuffle(Application app, int shuffleId) {
    applications.removeShuffle(app, shuffleId);
  }

  /**
   * Ends every attempt of an application now, whichever user registered it (as YARN's
   * stopApplication does): outputs deregistered and deleted. Returns the number of attempts ended.
   */
  public int endApplication(String applicationId) {
    return applications.endApplication(applicationId);
  }

  /**
   * The service's counters and its transfer node's ({@code node.*}); {@code refusals.<reason>}
   * counts refusals by reason (a quota's key or one of {@link ServiceCounters#REFUSAL_REASONS}).
   * {@link ServiceMetrics} exports them.
   */
  public Map<String, Long> stats() {
    return statsSnapshot.take();
  }

  /** Waits until {@link #close} ran. */
  public void awaitStop() throws InterruptedException {
    lifecycle.awaitStop();
  }

  /**
   * Stops accepting, closes every client, and, with recovery off, ends every application (its files
   * deleted); with recovery on, lets reads under way finish (bounded), deregisters the outputs and
   * keeps their files and records for the next run. Closes the transfer node and removes the
   * socket. Idempotent and safe from any thread: the first call does the work, any other waits
   * until it is done, so every caller returns with the service closed.
   */
  @Override
  public void close() {
    State was = lifecycle.beginClose();
    if (was == null) {
      return; // closed by another thread (waited for), or called again from within the close
    }
    LOG.info("shuffle service closing (was {})", was);
    try {
      try {
        whileClosing.run();
      } catch (RuntimeException e) {
        LOG.debug("shuffle service: closing hook failed: {}", e.toString());
      }
      Endpoints.closeQuietly(server);
      Endpoints.close(resolve, "resolve port");
      clients.stop();
      periodic.stop();
      if (log.enabled()) {
        ReadDrain.await(node);
        applications.detachAll(); // files and records stay for the next run
      } else {
        applications.endAll("ended: the shuffle service stops");
      }
      bytes.close();
      node.close();
      log.close();
      Endpoints.close(http, "HTTP endpoint");
      try {
        Files.deleteIfExists(config.socket());
      } catch (IOException ignored) {
        // the next start removes it
      }
    } finally {
      lifecycle.closed();
    }
  }
}
