package io.memwire.transfer.ucx;

import io.memwire.transfer.Lifecycle;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferException;
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
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ucx provider: one UCX context and worker per node on {@link UcxProgressThread}, a TCP control
 * listener on the node's port (authentication, worker address, remote keys: {@link UcxControl}),
 * and one-sided GETs by UCX endpoints ({@link UcxConnection}).
 */
public final class UcxProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);
  private static final AtomicInteger NODES = new AtomicInteger();

  private final TransferConfig config;
  private final UcxProgressThread progress;
  private final UcxRegistrar registrar;
  private final ServerSocket listener;
  private final byte[] secret;
  private final byte[] workerAddress;
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
      byte[] workerAddress,
      boolean peerErrorHandling) {
    this.config = config;
    this.peerErrorHandling = peerErrorHandling;
    this.progress = progress;
    this.registrar = new UcxRegistrar(progress, config.readTimeout());
    this.listener = listener;
    this.secret = config.authSecret().orElse(null);
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
    byte[] address =
        progress.call(
            () -> {
              ByteBuffer a = progress.worker().getAddress();
              byte[] b = new byte[a.remaining()];
              a.get(b);
              return b;
            });
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
    UcxProvider p =
        new UcxProvider(config, progress, listener, address, settings.peerErrorHandling());
    p.acceptor.start();
    LOG.info(
        "ucx provider on {}: JUCX {}, UCX library {}, {}; transports and devices: {} ({}); peer"
            + " failures seen by {}",
        p.localAddress(),
        UcxLibrary.jucxVersion(),
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
    return registrar.register(buffer, address, remoteReadable);
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
              workerAddress,
              registrar,
              (int) config.connectTimeout().toMillis(),
              sessions::remove);
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
    registrar.closeAll();
    progress.stop();
    LOG.debug("ucx provider closed; UCX objects live in this process: {}", UcxResources.describe());
  }

  private static void join(Thread t) {
    try {
      t.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
