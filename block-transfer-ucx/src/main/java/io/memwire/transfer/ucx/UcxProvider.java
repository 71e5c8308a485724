package io.memwire.transfer.ucx;

import io.memwire.transfer.Lifecycle;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.internal.MemoryAccess;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.spi.HandshakeEviction;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpConnectionRequest;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpListener;
import org.openucx.jucx.ucp.UcpListenerParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ucx provider: one UCX context and worker per node on {@link UcxProgressThread}, a TCP control
 * listener on the node's port (authentication, the UCX listener's port, remote keys: {@link
 * UcxControl}), a UCX listener on an ephemeral port that authenticated peers connect endpoints to
 * (rdma_cm on RDMA devices), and one-sided GETs by UCX endpoints ({@link UcxConnection}).
 */
public final class UcxProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);
  private static final AtomicInteger NODES = new AtomicInteger();

  private final TransferConfig config;
  private final UcxProgressThread progress;
  private final UcxRegistrar registrar;
  private final ServerSocket listener;
  private final byte[] secret;
  private final UcpListener ucxListener;
  private final int ucxPort;
  private final byte[] workerAddress;

  /**
   * The endpoints UCX's listener created for peers' connections, and each one's source address.
   * Progress thread only.
   */
  private final Map<UcpEndpoint, InetAddress> accepted = new IdentityHashMap<>();

  private final Thread acceptor;
  private final Set<UcxSession> sessions = ConcurrentHashMap.newKeySet();
  private final Set<UcxConnection> connections = ConcurrentHashMap.newKeySet();
  private final List<Thread> sessionThreads = new ArrayList<>();
  private final boolean peerErrorHandling;

  private final Lifecycle lifecycle = new Lifecycle();

  /** Closes a handshake that is not over by its deadline (a peer sending a byte at a time). */
  private final ScheduledExecutorService handshakeTimer;

  private UcxProvider(
      TransferConfig config,
      UcxProgressThread progress,
      ServerSocket listener,
      UcpListener ucxListener,
      byte[] workerAddress,
      boolean peerErrorHandling) {
    this.config = config;
    this.peerErrorHandling = peerErrorHandling;
    this.progress = progress;
    this.registrar = new UcxRegistrar(progress, config.readTimeout());
    this.listener = listener;
    this.secret = config.authSecret().orElse(null);
    this.ucxListener = ucxListener;
    this.ucxPort = ucxListener.getAddress().getPort();
    this.workerAddress = workerAddress;
    this.acceptor = new Thread(this::accept, "memwire-ucx-accept-" + listener.getLocalPort());
    acceptor.setDaemon(true);
    ScheduledThreadPoolExecutor timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "memwire-ucx-handshake-timer-" + listener.getLocalPort());
              t.setDaemon(true);
              return t;
            });
    timer.setRemoveOnCancelPolicy(true);
    timer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    this.handshakeTimer = timer;
  }

  /** Loads UCX, starts the worker and the control listener; logs one line naming the choices. */
  static UcxProvider open(TransferConfig config) {
    UcxLibrary.load()
        .ifPresent(
            why -> {
              throw new TransferConfigException("provider=ucx cannot start: " + why);
            });
    UcxSettings settings = UcxSettings.of(config);
    int n = NODES.incrementAndGet();
    UcxProgressThread progress;
    try {
      progress = UcxProgressThread.start("memwire-ucx-progress-" + n, settings.values());
    } catch (IllegalStateException e) {
      throw new TransferConfigException(
          "provider=ucx: UCX did not start with "
              + settings.describe()
              + " (check "
              + TransportSettings.UCX_TRANSPORTS.name()
              + ", "
              + TransportSettings.DEVICE.name()
              + ", "
              + TransportSettings.UCX_CONFIG.name()
              + "): "
              + e.getMessage());
    }
    ServerSocket listener;
    try {
      listener = new ServerSocket();
      listener.setReuseAddress(true);
      listener.bind(new InetSocketAddress(config.resolveBindAddress(), config.port()), 128);
    } catch (IOException e) {
      progress.stop();
      throw new TransferConfigException(
          "provider=ucx: cannot listen on "
              + config.bindAddress()
              + ":"
              + config.port()
              + ": "
              + e);
    }
    // The provider answers the listener's connection requests; it exists only after the listener.
    AtomicReference<UcxProvider> self = new AtomicReference<>();
    UcpListener ucxListener;
    try {
      InetAddress bind = config.resolveBindAddress();
      ucxListener =
          progress.call(
              () -> {
                UcpListener l =
                    progress
                        .worker()
                        .newListener(
                            new UcpListenerParams()
                                .setSockAddr(new InetSocketAddress(bind, 0))
                                .setConnectionHandler(
                                    req -> {
                                      UcxProvider p = self.get();
                                      if (p == null) {
                                        req.reject();
                                      } else {
                                        p.onConnectionRequest(req);
                                      }
                                    }));
                UcxResources.LISTENERS.incrementAndGet();
                return l;
              });
    } catch (RuntimeException e) {
      closeQuietly(listener);
      progress.stop();
      throw new TransferConfigException(
          "provider=ucx: UCX cannot listen on "
              + config.bindAddress()
              + " with "
              + settings.describe()
              + " (its connection manager needs rdma_cm on an RDMA device or its tcp transport): "
              + e.getMessage());
    }
    byte[] address =
        progress.call(
            () -> {
              ByteBuffer a = progress.worker().getAddress();
              byte[] b = new byte[a.remaining()];
              a.get(b);
              return b;
            });
    UcxProvider p =
        new UcxProvider(
            config, progress, listener, ucxListener, address, settings.peerErrorHandling());
    self.set(p);
    p.acceptor.start();
    LOG.info(
        "ucx provider on {} (UCX endpoints connect to port {}): JUCX {}, UCX {} ({}), {};"
            + " transports and devices: {} ({}); peer failures seen by {}",
        p.localAddress(),
        p.ucxPort,
        UcxLibrary.jucxVersion(),
        UcxLibrary.ucxVersion(),
        UcxLibrary.libucpPath(),
        settings.whyNoRdma().map(w -> "no RDMA: " + w).orElse("RDMA available"),
        settings.describe(),
        settings.values().containsKey("TLS")
            ? "from " + TransportSettings.UCX_TRANSPORTS.name()
            : "UCX picks the fastest transport that reaches each peer",
        settings.peerErrorHandling()
            ? "UCX and the control connection"
            : "the control connection (UCX's shared-memory transports have no peer-failure"
                + " handling)");
    return p;
  }

  /**
   * A peer connects an endpoint to the UCX listener (progress thread). Accepted only from an
   * address with an authenticated control session, and no more endpoints from it than it has
   * sessions: the endpoint itself opens nothing (remote keys travel only on authenticated control
   * connections), but unauthenticated peers must not pile endpoints up.
   */
  private void onConnectionRequest(UcpConnectionRequest req) {
    InetAddress from = req.getClientAddress().getAddress();
    long sessionsFrom =
        sessions.stream().filter(x -> x.serving() && from.equals(x.source())).count();
    long endpointsFrom = accepted.values().stream().filter(from::equals).count();
    if (isClosed() || endpointsFrom >= sessionsFrom) {
      LOG.warn(
          "ucx: rejected a UCX connection from {}: {} authenticated control sessions from it, {}"
              + " endpoints",
          req.getClientAddress(),
          sessionsFrom,
          endpointsFrom);
      req.reject();
      return;
    }
    UcpEndpoint[] ep = new UcpEndpoint[1];
    UcpEndpointParams params =
        new UcpEndpointParams()
            .setConnectionRequest(req)
            .setErrorHandler(
                (e, status, msg) -> {
                  // The peer closed or failed: free it after this callback returns.
                  LOG.debug("ucx: the endpoint from {} ended: {}", from, msg);
                  progress.execute(() -> closeAccepted(ep[0]));
                });
    if (peerErrorHandling) {
      params.setPeerErrorHandlingMode();
    }
    try {
      ep[0] = progress.worker().newEndpoint(params);
    } catch (UcxException e) {
      LOG.warn("ucx: cannot accept the UCX connection from {}", req.getClientAddress(), e);
      return;
    }
    UcxResources.ENDPOINTS.incrementAndGet();
    accepted.put(ep[0], from);
  }

  /** Progress thread: closes an accepted endpoint once (force: its peer is gone or going). */
  private void closeAccepted(UcpEndpoint ep) {
    if (ep == null || accepted.remove(ep) == null) {
      return;
    }
    try {
      UcpRequest unused = ep.closeNonBlockingForce();
    } catch (UcxException e) {
      LOG.debug("closing an accepted endpoint", e);
    }
    UcxResources.ENDPOINTS.decrementAndGet();
  }

  /**
   * A control session ended: when none is left from its address, the endpoints accepted from it go
   * too (a peer that vanished without UCX noticing).
   */
  private void sessionEnded(UcxSession s) {
    sessions.remove(s);
    InetAddress from = s.source();
    if (sessions.stream().noneMatch(x -> x.serving() && from.equals(x.source()))
        && progress.isAlive()) {
      progress.execute(
          () -> {
            if (sessions.stream().noneMatch(x -> x.serving() && from.equals(x.source()))) {
              for (UcpEndpoint ep : new ArrayList<>(accepted.keySet())) {
                if (from.equals(accepted.get(ep))) {
                  closeAccepted(ep);
                }
              }
            }
          });
    }
  }

  /**
   * Whether this node's endpoints connect by socket address: yes unless its transports are all
   * shared memory (UCX 1.13 cannot wire those up through a connection manager: "Destination is
   * unreachable"), the same condition as peer-failure handling.
   */
  boolean connectsBySocketAddress() {
    return peerErrorHandling;
  }

  boolean peerErrorHandling() {
    return peerErrorHandling;
  }

  UcxProgressThread progress() {
    return progress;
  }

  @Override
  public ProviderKind kind() {
    return ProviderKind.UCX;
  }

  @Override
  public InetSocketAddress localAddress() {
    return new InetSocketAddress(listener.getInetAddress(), listener.getLocalPort());
  }

  @Override
  public ProviderRegistration register(
      ByteBuffer buffer, long address, boolean remoteReadable, FileChannel file, long fileOffset) {
    if (isClosed()) {
      throw new RegistrationException("the ucx provider is closed");
    }
    if (file != null && remoteReadable) {
      return registerFile(buffer, address, null, file, fileOffset);
    }
    return registrar.register(buffer, address, remoteReadable);
  }

  /** Set once UCX refused a read-only file mapping; later file regions skip that attempt. */
  private volatile boolean readOnlyMappingRefused;

  /**
   * Registers a file region as its read-only mapping; where UCX cannot (its verbs transports
   * register every region writable, and the kernel will not pin a read-only shared mapping for
   * writing: EFAULT), through a read-write shared mapping of the same range, which nothing writes
   * through; where the file is not writable, as a private copy in direct memory.
   */
  @Override
  public ProviderRegistration registerFile(
      ByteBuffer mapping, long address, Path file, FileChannel channel, long fileOffset) {
    if (isClosed()) {
      throw new RegistrationException("the ucx provider is closed");
    }
    RegistrationException readOnlyFailure = null;
    if (!readOnlyMappingRefused) {
      try {
        return registrar.register(mapping, address, true);
      } catch (RegistrationException e) {
        readOnlyFailure = e;
        readOnlyMappingRefused = true;
        LOG.info(
            "ucx: UCX cannot register read-only file mappings here ({}): file regions are"
                + " registered through read-write shared mappings, or served from private copies"
                + " when a file is not writable",
            e.getMessage());
      }
    }
    int length = mapping.capacity();
    String why = "the file's path is unknown";
    if (file != null) {
      try {
        return registerSharedMapping(file, fileOffset, length);
      } catch (IOException | RegistrationException e) {
        why = e.toString();
      }
    }
    LOG.debug("ucx: file region of {} bytes registered as a private copy: {}", length, why);
    ByteBuffer copy = ByteBuffer.allocateDirect(length);
    copy.put(mapping.duplicate().clear()).clear();
    try {
      return registrar.register(copy, MemoryAccess.address(copy), true, () -> free(copy));
    } catch (RegistrationException e) {
      free(copy);
      if (readOnlyFailure != null) {
        e.addSuppressed(readOnlyFailure);
      }
      throw e;
    }
  }

  private ProviderRegistration registerSharedMapping(Path file, long fileOffset, int length)
      throws IOException {
    FileTime modified = Files.getLastModifiedTime(file);
    MappedByteBuffer shared;
    try (FileChannel rw =
        FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      shared = rw.map(FileChannel.MapMode.READ_WRITE, fileOffset, length);
    }
    try {
      ProviderRegistration r =
          registrar.register(shared, MemoryAccess.address(shared), true, () -> free(shared));
      // Pinning takes write faults, which stamp the file's mtime though no byte changes.
      if (!Files.getLastModifiedTime(file).equals(modified)) {
        Files.setLastModifiedTime(file, modified);
      }
      return r;
    } catch (RegistrationException e) {
      free(shared);
      throw e;
    }
  }

  private static void free(ByteBuffer b) {
    MemoryAccess.free(b);
  }

  @Override
  public ProviderConnection connect(InetSocketAddress peer) throws TransferException {
    if (isClosed()) {
      throw new io.memwire.transfer.TransferConnectionException(
          "the ucx provider is closed", peer, null);
    }
    UcxConnection c =
        UcxConnection.open(this, peer, (int) config.connectTimeout().toMillis(), secret);
    connections.add(c);
    if (isClosed()) {
      c.close();
    }
    return c;
  }

  void forget(UcxConnection c) {
    connections.remove(c);
  }

  private void accept() {
    AtomicInteger count = new AtomicInteger();
    while (!isClosed()) {
      Socket s;
      try {
        s = listener.accept();
      } catch (IOException e) {
        if (!isClosed()) {
          LOG.warn("ucx control listener on {} failed", localAddress(), e);
        }
        return;
      }
      if (handshakes() >= maxHandshakes() && !makeRoomFor(s.getInetAddress())) {
        refuse(s, "handshakes");
        continue;
      }
      if (sessions.size() - handshakes() >= config.maxConnections()) {
        LOG.warn(
            "ucx: refusing {}: at maxConnections={}",
            s.getRemoteSocketAddress(),
            config.maxConnections());
        try {
          s.close();
        } catch (IOException e) {
          LOG.debug("closing a refused socket", e);
        }
        continue;
      }
      UcxSession session =
          new UcxSession(
              s,
              secret,
              ucxPort,
              workerAddress,
              registrar,
              (int) config.connectTimeout().toMillis(),
              this::sessionEnded);
      sessions.add(session);
      session.deadline(
          handshakeTimer.schedule(
              () -> {
                if (session.evict()) {
                  LOG.warn(
                      "ucx: closed the control connection of {}: no authentication within {} ms",
                      session.peer(),
                      config.connectTimeout().toMillis());
                }
              },
              config.connectTimeout().toMillis(),
              TimeUnit.MILLISECONDS));
      Thread t =
          new Thread(
              session,
              "memwire-ucx-session-" + listener.getLocalPort() + "-" + count.incrementAndGet());
      t.setDaemon(true);
      synchronized (sessionThreads) {
        sessionThreads.removeIf(x -> !x.isAlive());
        sessionThreads.add(t);
      }
      t.start();
    }
  }

  /**
   * Handshakes in progress at most: apart from {@code maxConnections}, so peers that never
   * authenticate cannot take authenticated peers' places (as over tcp).
   */
  int maxHandshakes() {
    return Math.max(16, config.maxConnections() / 16);
  }

  private int handshakes() {
    int n = 0;
    for (UcxSession x : sessions) {
      if (x.inHandshake()) {
        n++;
      }
    }
    return n;
  }

  /** At the handshake cap, closes the one {@link HandshakeEviction} picks; false if none left. */
  private boolean makeRoomFor(InetAddress source) {
    for (int attempt = 0; attempt < 8 && handshakes() >= maxHandshakes(); attempt++) {
      List<UcxSession> open = new ArrayList<>();
      for (UcxSession x : sessions) {
        if (x.inHandshake()) {
          open.add(x);
        }
      }
      UcxSession victim =
          HandshakeEviction.victim(open, source, UcxSession::source, UcxSession::startedNanos);
      if (victim == null) {
        return false;
      }
      victim.evict(); // false: it authenticated meanwhile and keeps its place
    }
    return handshakes() < maxHandshakes();
  }

  private static void refuse(Socket s, String what) {
    LOG.warn("ucx: refusing {}: at the cap of {}", s.getRemoteSocketAddress(), what);
    try {
      s.close();
    } catch (IOException e) {
      LOG.debug("closing a refused socket", e);
    }
  }

  private boolean isClosed() {
    return !lifecycle.isOpen();
  }

  @Override
  public void close() {
    if (!lifecycle.beginClose()) {
      return; // closed, or being closed by another thread
    }
    try {
      closeBody();
    } finally {
      lifecycle.closed();
    }
  }

  private void closeBody() {
    handshakeTimer.shutdownNow();
    try {
      listener.close();
    } catch (IOException e) {
      LOG.debug("closing the ucx listener", e);
    }
    join(acceptor);
    for (UcxSession s : new ArrayList<>(sessions)) {
      s.close();
    }
    List<Thread> threads;
    synchronized (sessionThreads) {
      threads = new ArrayList<>(sessionThreads);
    }
    threads.forEach(UcxProvider::join);
    for (UcxConnection c : new ArrayList<>(connections)) {
      c.close();
    }
    // Each connection's quiesce is queued on the progress thread; these run after them.
    if (progress.isAlive()) {
      progress.call(
          () -> {
            for (UcpEndpoint ep : new ArrayList<>(accepted.keySet())) {
              closeAccepted(ep);
            }
            ucxListener.close();
            UcxResources.LISTENERS.decrementAndGet();
            return null;
          });
    }
    registrar.closeAll();
    progress.stop();
    LOG.debug("ucx provider closed; UCX objects live in this process: {}", UcxResources.describe());
  }

  private static void closeQuietly(ServerSocket s) {
    try {
      s.close();
    } catch (IOException e) {
      LOG.debug("closing the ucx control listener", e);
    }
  }

  private static void join(Thread t) {
    try {
      t.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
