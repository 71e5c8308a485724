package io.memwire.transfer.ucx;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.spi.HandshakeEviction;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ucx provider's control port: a TCP listener on the node's port where peers authenticate (HMAC
 * over the shared secret) and then ask for remote keys, one {@link UcxSession} and thread each
 * ({@code memwire-ucx-session-*}), accepted by {@code memwire-ucx-accept-*}. Handshakes are capped
 * apart from {@code maxConnections}, evicted at the cap with {@link HandshakeEviction}, and closed
 * when not authenticated within {@code connectTimeout} ({@code memwire-ucx-handshake-timer-*}).
 */
final class UcxControlPort {
  private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);

  private final TransferConfig config;
  private final ServerSocket listener;
  private final byte[] secret;
  private final int ucxPort;
  private final byte[] workerAddress;
  private final UcxRegistrar registrar;
  private final Set<UcxSession> sessions;
  private final Consumer<UcxSession> ended;
  private final BooleanSupplier closed;
  private final Thread acceptor;

  @GuardedBy("sessionThreads")
  private final List<Thread> sessionThreads = new ArrayList<>();

  /** Closes a handshake that is not over by its deadline (a peer sending a byte at a time). */
  private final ScheduledExecutorService handshakeTimer;

  /**
   * @param ucxPort the UCX listener's port, sent to authenticated peers
   * @param sessions the provider's live sessions (a concurrent set; this port adds to it)
   * @param ended called when a session ends (it removes itself from {@code sessions} there)
   * @param closed whether the provider is closing
   */
  UcxControlPort(
      TransferConfig config,
      ServerSocket listener,
      int ucxPort,
      byte[] workerAddress,
      UcxRegistrar registrar,
      Set<UcxSession> sessions,
      Consumer<UcxSession> ended,
      BooleanSupplier closed) {
    this.config = config;
    this.listener = listener;
    this.secret = config.authSecret().orElse(null);
    this.ucxPort = ucxPort;
    this.workerAddress = workerAddress;
    this.registrar = registrar;
    this.sessions = sessions;
    this.ended = ended;
    this.closed = closed;
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

  void start() {
    acceptor.start();
  }

  /** The control port's address: the node's. */
  InetSocketAddress localAddress() {
    return new InetSocketAddress(listener.getInetAddress(), listener.getLocalPort());
  }

  private void accept() {
    AtomicInteger count = new AtomicInteger();
    while (!closed.getAsBoolean()) {
      Socket s;
      try {
        s = listener.accept();
      } catch (IOException e) {
        if (!closed.getAsBoolean()) {
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
              ended);
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

  /** Stops accepting, closes every session and joins the port's threads (bounded). */
  void close() {
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
    threads.forEach(UcxControlPort::join);
  }

  private static void join(Thread t) {
    try {
      t.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
