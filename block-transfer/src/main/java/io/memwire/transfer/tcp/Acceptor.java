package io.memwire.transfer.tcp;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.spi.HandshakeEviction;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Accepts a {@link TcpProvider}'s connections, admits them within its limits (serving and
 * handshaking) and spreads them over the serving loops; runs on the provider's first serving loop.
 * It never closes the listener on a failure: a failed {@code accept()} pauses accepting (100 ms,
 * doubling up to 2 s, resumed by the loop's tick) and the next success resumes normal service.
 */
final class Acceptor implements EventLoop.Handler {
  private static final Logger LOG = LoggerFactory.getLogger(TcpProvider.class);

  /** Shortest and longest pause of accepting after {@code accept()} failed. */
  private static final long ACCEPT_BACKOFF_MIN_MS = 100;

  private static final long ACCEPT_BACKOFF_MAX_MS = 2_000;

  /** Connections taken per readiness event, so one flood does not starve the loop's others. */
  private static final int ACCEPTS_PER_EVENT = 256;

  private final TcpProvider provider;
  private final ServerSocketChannel server;
  private final InetSocketAddress localAddress;
  SelectionKey key;
  private long pausedUntil;
  private boolean paused;
  private long backoffMs;
  private long failuresInRow;
  private boolean refusing;

  Acceptor(TcpProvider provider, ServerSocketChannel server, InetSocketAddress localAddress) {
    this.provider = provider;
    this.server = server;
    this.localAddress = localAddress;
  }

  @Override
  public void ready(SelectionKey k) {
    for (int i = 0; i < ACCEPTS_PER_EVENT && !provider.isClosed(); i++) {
      SocketChannel ch;
      try {
        ch = server.accept();
      } catch (ClosedChannelException e) {
        return; // the provider is closing
      } catch (IOException | RuntimeException | Error e) {
        acceptFailed(k, e);
        return;
      }
      if (ch == null) {
        return;
      }
      if (failuresInRow > 0) {
        LOG.info(
            "accepting tcp transfer connections on {} again after {} failed accepts",
            localAddress,
            failuresInRow);
        failuresInRow = 0;
        backoffMs = 0;
      }
      admit(ch);
    }
  }

  private void acceptFailed(SelectionKey k, Throwable e) {
    provider.acceptFailures.increment();
    failuresInRow++;
    backoffMs =
        backoffMs == 0 ? ACCEPT_BACKOFF_MIN_MS : Math.min(backoffMs * 2, ACCEPT_BACKOFF_MAX_MS);
    pausedUntil = System.nanoTime() + backoffMs * 1_000_000L;
    paused = true;
    if (k.isValid()) {
      k.interestOps(0);
    }
    if (failuresInRow == 1) {
      LOG.warn(
          "accept() failed on {} ({}); still listening, retrying with a back-off of up to "
              + "{} ms (failures are counted as acceptFailures)",
          localAddress,
          e.toString(),
          ACCEPT_BACKOFF_MAX_MS);
    } else {
      LOG.debug("accept() failed again on {}: {}", localAddress, e.toString());
    }
  }

  @Override
  public void tick(long nowNanos) {
    if (paused && nowNanos - pausedUntil >= 0) {
      paused = false;
      if (key != null && key.isValid()) {
        key.interestOps(SelectionKey.OP_ACCEPT);
      }
    }
  }

  private void admit(SocketChannel ch) {
    if (provider.sessions().servingCount() >= provider.config().maxConnections()) {
      refuse(ch, "connections");
      return;
    }
    if (provider.sessions().handshakeCount() >= provider.sessions().maxHandshakes()
        && !makeRoomFor(sourceOf(ch))) {
      refuse(ch, "connections still in their handshake");
      return;
    }
    if (refusing) {
      refusing = false;
      LOG.info(
          "serving fewer than {} connections on {} again; accepting",
          provider.config().maxConnections(),
          localAddress);
    }
    ResponderSession s = null;
    try {
      ch.configureBlocking(false);
      ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
      s = new ResponderSession(provider, ch);
      EventLoop loop = provider.pickServeLoop();
      s.runsOn(loop);
      provider.sessions().addSession(s);
      ResponderSession session = s;
      loop.execute(
          () -> {
            try {
              session.attach(loop.register(ch, SelectionKey.OP_READ, session));
            } catch (IOException | RuntimeException | Error e) {
              session.closeOnLoop(e instanceof Exception ? (Exception) e : new IOException(e));
            }
          });
    } catch (IOException | RuntimeException | Error e) {
      // Out of memory for the session, say: drop this connection only.
      provider.loopErrors.increment();
      LOG.debug("dropped an accepted connection on {}: {}", localAddress, e.toString());
      if (s != null) {
        provider.sessions().removeSession(s);
      }
      closeQuietly(ch);
    }
  }

  /**
   * At the handshake cap, makes room for a newcomer from {@code source} by evicting the handshake
   * {@link HandshakeEviction} picks, so a peer authenticating from an address with fewer in
   * progress keeps its place for its whole handshake, however long it takes within the timeout.
   *
   * @return false when no room could be made (every handshake counted is ending already)
   */
  private boolean makeRoomFor(InetAddress source) {
    for (int attempt = 0; attempt < 8; attempt++) {
      if (provider.sessions().handshakeCount() < provider.sessions().maxHandshakes()) {
        return true;
      }
      List<ResponderSession> open = new ArrayList<>();
      for (ResponderSession s : provider.sessions().handshakes()) {
        if (s.inHandshake()) {
          open.add(s);
        }
      }
      ResponderSession victim =
          HandshakeEviction.victim(
              open, source, ResponderSession::source, ResponderSession::startedNanos);
      if (victim == null) {
        return false;
      }
      // False: it authenticated (or closed) meanwhile and keeps its place; look again.
      victim.evict();
    }
    return provider.sessions().handshakeCount() < provider.sessions().maxHandshakes();
  }

  private static InetAddress sourceOf(SocketChannel ch) {
    try {
      SocketAddress a = ch.getRemoteAddress();
      return a instanceof InetSocketAddress ? ((InetSocketAddress) a).getAddress() : null;
    } catch (IOException e) {
      return null;
    }
  }

  /** Tells the peer the node is at a connection limit, then closes. */
  private void refuse(SocketChannel ch, String what) {
    provider.connectionsRefused.increment();
    if (!refusing) {
      refusing = true;
      LOG.warn(
          "serving {} connections on {}, {} still in their handshake: at the limit of {} ({} "
              + "and at most {} handshakes); refusing further ones until fewer are open "
              + "(counted as connectionsRefused)",
          provider.sessions().servingCount(),
          localAddress,
          provider.sessions().handshakeCount(),
          what,
          TransferConfig.MAX_CONNECTIONS,
          provider.sessions().maxHandshakes());
    }
    try {
      ch.configureBlocking(false);
      // Take the client's HELLO if it is already here, so the close is a FIN, not a reset
      // that could discard the answer before the client reads it.
      ch.read(ByteBuffer.allocate(Handshake.HELLO_SIZE));
      ch.write(
          Handshake.challenge(Handshake.STATUS_BUSY, false, new byte[Handshake.NONCE_SIZE], null));
    } catch (IOException | RuntimeException | Error e) {
      LOG.debug("refusing a connection on {}: {}", localAddress, e.toString());
    } finally {
      closeQuietly(ch);
    }
  }

  @Override
  public void closeOnLoop(Exception cause) {
    // Only at loop shutdown: ready() and tick() handle their own failures.
    try {
      server.close();
    } catch (IOException e) {
      LOG.debug("close server", e);
    }
  }

  private static void closeQuietly(SocketChannel ch) {
    try {
      ch.close();
    } catch (IOException e) {
      LOG.debug("close", e);
    }
  }
}
