package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A peer that could not be connected to is remembered for {@code peerBackoff} (doubled per failure
 * in a row): attempts within it fail at once, without touching the network, and name the failure.
 */
class PeerBackoffTest {
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  /** Accepts connections and never answers the handshake; counts the attempts that reach it. */
  private static final class SilentPeer implements AutoCloseable {
    final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    final AtomicInteger accepted = new AtomicInteger();
    final List<Socket> sockets = new ArrayList<>();
    final Thread acceptor;

    SilentPeer() throws IOException {
      acceptor =
          new Thread(
              () -> {
                try {
                  while (true) {
                    Socket s = server.accept();
                    synchronized (sockets) {
                      sockets.add(s);
                    }
                    accepted.incrementAndGet();
                  }
                } catch (IOException closed) {
                  // close() ends the loop
                }
              },
              "silent-peer");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    /**
     * How many connections reached this peer: opens one more itself and waits for it, so every
     * earlier connection (queued before it in the backlog) has been accepted too.
     */
    int attemptsSoFar() throws Exception {
      int before = accepted.get();
      try (Socket probe = new Socket(server.getInetAddress(), server.getLocalPort())) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
          synchronized (sockets) {
            if (!sockets.isEmpty()
                && sockets.get(sockets.size() - 1).getPort() == probe.getLocalPort()) {
              break;
            }
          }
          assertTrue(System.nanoTime() < deadline, "probe not accepted within 30 s");
          Thread.sleep(5);
        }
      }
      int n = accepted.decrementAndGet();
      assertTrue(n >= before);
      return n;
    }

    InetSocketAddress address() {
      return new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort());
    }

    @Override
    public void close() throws Exception {
      server.close();
      synchronized (sockets) {
        for (Socket s : sockets) {
          s.close();
        }
      }
      acceptor.join(5000);
    }
  }

  private static TransferConfig config(Duration backoff) {
    return TransferConfig.builder()
        .provider(ProviderKind.TCP)
        .connectTimeout(Duration.ofMillis(300))
        .peerBackoff(backoff)
        .build();
  }

  private SilentPeer silentPeer() throws IOException {
    SilentPeer peer = new SilentPeer();
    open.add(peer);
    return peer;
  }

  /** A node on the manual clock {@code time}. */
  private TransferNode node(Duration backoff, ManualTime time) {
    TransferNode n = time.start(config(backoff));
    open.add(n);
    return n;
  }

  private TransferNode node(Duration backoff) {
    TransferNode n = TransferNode.start(config(backoff));
    open.add(n);
    return n;
  }

  @Test
  void attemptsWithinTheBackoffFailAtOnceNamingTheFirstFailure() throws Exception {
    SilentPeer peer = new SilentPeer();
    open.add(peer);
    TransferNode node = node(Duration.ofMinutes(5));

    TransferException first =
        assertThrows(TransferException.class, () -> node.connection(peer.address()));
    assertInstanceOf(TransferTimeoutException.class, first, "the handshake never came");
    assertEquals(1, peer.attemptsSoFar());

    TransferConnectionException again =
        assertThrows(TransferConnectionException.class, () -> node.connection(peer.address()));
    assertSame(first, again.getCause(), "the refusal carries the failure it remembers");
    assertTrue(again.getMessage().contains("last attempt failed"), again.getMessage());
    assertEquals(1, peer.attemptsSoFar(), "no second connection attempt reached the peer");
    assertEquals(1L, node.stats().asMap().get("connectFailures"));
    assertEquals(1L, node.stats().asMap().get("peerBackoffRejects"));
  }

  @Test
  void aRefusingPeerIsRetriedOnceTheBackoffHasPassed() throws Exception {
    SilentPeer peer = silentPeer();
    Duration backoff = Duration.ofMinutes(1);
    ManualTime time = new ManualTime();
    TransferNode node = node(backoff, time);
    assertThrows(TransferTimeoutException.class, () -> node.connection(peer.address()));
    time.advance(backoff.dividedBy(2));
    assertThrows(TransferConnectionException.class, () -> node.connection(peer.address()));
    assertEquals(1, peer.attemptsSoFar(), "tried again within the back-off");
    // Once the back-off is over the next call really tries again (and times out again).
    time.advance(backoff.dividedBy(2));
    assertThrows(TransferTimeoutException.class, () -> node.connection(peer.address()));
    assertEquals(2, peer.attemptsSoFar(), "no second attempt after the back-off");
    assertEquals(2L, node.stats().asMap().get("connectFailures"));
    assertEquals(1L, node.stats().asMap().get("peerBackoffRejects"));
  }

  /**
   * A peer that keeps failing (a firewall dropping the connect) is tried ever less often, so each
   * reader does not pay a connectTimeout every peerBackoff: the back-off doubles per failure in a
   * row, up to five minutes.
   */
  @Test
  void theBackoffDoublesWithEachFailureInARow() throws Exception {
    SilentPeer peer = silentPeer();
    Duration backoff = Duration.ofSeconds(10);
    ManualTime time = new ManualTime();
    TransferNode node = node(backoff, time);
    assertThrows(TransferTimeoutException.class, () -> node.connection(peer.address()));
    time.advance(backoff);
    assertThrows(TransferTimeoutException.class, () -> node.connection(peer.address()));
    assertEquals(2, peer.attemptsSoFar());
    // Second failure in a row: 20 s now; 10 s later attempts still fail at once.
    time.advance(backoff);
    TransferConnectionException held =
        assertThrows(TransferConnectionException.class, () -> node.connection(peer.address()));
    assertTrue(held.getMessage().contains("next attempt allowed in 10000 ms"), held.getMessage());
    time.advance(backoff);
    assertThrows(TransferTimeoutException.class, () -> node.connection(peer.address()));
    assertEquals(3, peer.attemptsSoFar(), "tried again once the doubled back-off ran out");
    assertEquals(3L, node.stats().asMap().get("connectFailures"));
    assertEquals(1L, node.stats().asMap().get("peerBackoffRejects"));
  }

  @Test
  void backoffsDoubleUpToFiveMinutesOrTheSettingIfLarger() {
    long s = 1_000_000_000L;
    assertEquals(5 * s, ConnectionPool.backoffNanos(5 * s, 1));
    assertEquals(10 * s, ConnectionPool.backoffNanos(5 * s, 2));
    assertEquals(160 * s, ConnectionPool.backoffNanos(5 * s, 6));
    assertEquals(300 * s, ConnectionPool.backoffNanos(5 * s, 7));
    assertEquals(300 * s, ConnectionPool.backoffNanos(5 * s, Integer.MAX_VALUE));
    assertEquals(600 * s, ConnectionPool.backoffNanos(600 * s, 3));
  }

  @Test
  void aSuccessfulConnectionClearsTheBackoff() throws Exception {
    TransferNode server = node(Duration.ofMillis(200));
    TransferNode client = node(Duration.ofMillis(200));
    // A port nobody listens on: refused.
    InetSocketAddress dead;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      dead = new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort());
    }
    assertThrows(TransferConnectionException.class, () -> client.connection(dead));
    assertTrue(
        client.connection(server.localAddress()).isOpen(),
        "another peer is not affected by one peer's back-off");
    assertEquals(1L, client.stats().asMap().get("connectFailures"));
  }

  @Test
  void zeroTurnsTheBackoffOff() throws Exception {
    SilentPeer peer = new SilentPeer();
    open.add(peer);
    TransferNode node = node(Duration.ZERO);
    assertThrows(TransferTimeoutException.class, () -> node.connection(peer.address()));
    assertThrows(TransferTimeoutException.class, () -> node.connection(peer.address()));
    assertEquals(2, peer.attemptsSoFar(), "every attempt reaches the peer");
    assertEquals(0L, node.stats().asMap().get("peerBackoffRejects"));
  }
}
