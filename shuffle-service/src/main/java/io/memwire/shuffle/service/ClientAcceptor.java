package io.memwire.shuffle.service;

import io.memwire.shuffle.protocol.ServiceProtocol;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The service's side of its Unix socket: the {@code memwire-shuffle-service-accept} thread admits
 * executors (the peer's user from {@code SO_PEERCRED}, allowed users, the per-user connection
 * quota; a refusal is one ERROR frame, never a blocked acceptor), starts a {@link ClientSession}
 * thread per admitted executor and closes sessions past their deadlines.
 */
final class ClientAcceptor {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleService.class);
  private static final AtomicInteger SESSIONS = new AtomicInteger();

  private final ShuffleService service;
  private final ServerSocketChannel server;
  private final ServiceConfig config;
  private final Quotas quotas;
  private final ServiceCounters counters;
  private final BooleanSupplier closed;
  private final Set<ClientSession> sessions = ConcurrentHashMap.newKeySet();
  private final Thread acceptor;

  ClientAcceptor(
      ShuffleService service,
      ServerSocketChannel server,
      ServiceConfig config,
      Quotas quotas,
      ServiceCounters counters,
      BooleanSupplier closed) {
    this.service = service;
    this.server = server;
    this.config = config;
    this.quotas = quotas;
    this.counters = counters;
    this.closed = closed;
    this.acceptor = new Thread(this::acceptLoop, "memwire-shuffle-service-accept");
    this.acceptor.setDaemon(true);
  }

  void start() {
    acceptor.start();
  }

  boolean isAlive() {
    return acceptor.isAlive();
  }

  /** True once {@link #start} has started the accept thread. */
  boolean started() {
    return acceptor.getState() != Thread.State.NEW;
  }

  int sessions() {
    return sessions.size();
  }

  /**
   * After the server socket closed: waits for the accept thread, then closes every session's
   * channel (each session's thread sees the close and ends).
   */
  void stop() {
    try {
      acceptor.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (ClientSession s : new ArrayList<>(sessions)) {
      closeQuietly(s.channel());
    }
  }

  private void acceptLoop() {
    long backoff = 100;
    while (!closed.getAsBoolean()) {
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
      counters.refused("userNotAllowed");
      LOG.warn("shuffle service: refused a client: {}", refusal);
    } else {
      refusal = quotas.takeClient(user);
      code = ServiceProtocol.E_NO_CAPACITY;
    }
    if (refusal != null) {
      counters.clientsRefused.increment();
      ch.configureBlocking(false); // never block the acceptor on a client that does not read
      ch.write(new ServiceProtocol.Out(ServiceProtocol.ERROR).u8(code).str(refusal).frame());
      // Take what the client sent already: closing with unread bytes would reset the connection
      // before the client reads the refusal.
      ch.read(ByteBuffer.allocate(ServiceProtocol.MAX_FRAME));
      ch.close();
      return;
    }
    ClientSession s =
        new ClientSession(
            service, ch, user, System.nanoTime() + config.registerTimeout().toNanos());
    sessions.add(s);
    if (closed.getAsBoolean()) {
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

  /** A session ended: its slot in the user's quota goes back, its channel is closed. */
  void sessionEnded(ClientSession s) {
    if (sessions.remove(s)) {
      quotas.returnClient(s.user());
    }
    closeQuietly(s.channel());
  }

  /** Closes connections past their deadline (the deadlines thread, every 100 ms). */
  void enforceDeadlines() {
    try {
      long now = System.nanoTime();
      for (ClientSession s : sessions) {
        String overdue = s.overdue(now);
        if (overdue != null) {
          counters.clientsTimedOut.increment();
          LOG.debug("shuffle service: closed a connection of {}: {}", s.user().getName(), overdue);
          closeQuietly(s.channel()); // its thread sees the close and ends the session
        }
      }
    } catch (RuntimeException e) {
      LOG.warn("shuffle service: deadline check failed this round: {}", e.toString());
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
