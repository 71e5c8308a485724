package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.memwire.transfer.metrics.TransportMetrics;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The node's connection pool keeps per-peer state only for peers it still has a connection to, is
 * connecting to, or is backing off from: a long-lived reader of many short-lived peers does not
 * grow.
 */
class ConnectionPoolTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  private final InMemoryTransport transport = new InMemoryTransport();
  private final List<TransferNode> nodes = new ArrayList<>();

  @AfterEach
  void closeAll() {
    TransferContractTest.closeAndCheck(nodes);
    transport.close();
  }

  private TransferNode node(TransferConfigBuilder b) {
    TransferNode n = transport.start(b.build());
    nodes.add(n);
    return n;
  }

  /** The peers {@code node}'s pool keeps state for, as its stats report them. */
  private static long trackedPeers(TransferNode node) {
    return node.stats().get(TransportMetrics.TRACKED_PEERS);
  }

  @Test
  void connectingToAndClosingManyPeersLeavesNoPerPeerState() throws Exception {
    TransferNode client = node(TransferConfig.builder());
    int peers = 40;
    for (int i = 0; i < peers; i++) {
      TransferNode server = node(TransferConfig.builder());
      InetSocketAddress peer = server.localAddress();
      Connection c = client.connection(peer);
      assertSame(c, client.connection(peer), "cached while open");
      client.disconnect(peer);
    }
    assertEquals(peers, transport.connects());
    assertEquals(0, trackedPeers(client), "per-peer state left behind");
  }

  @Test
  void concurrentConnectsShareOneConnectionAndLeaveNoLock() throws Exception {
    TransferNode client = node(TransferConfig.builder());
    TransferNode server = node(TransferConfig.builder());
    InetSocketAddress peer = server.localAddress();
    int threads = 8;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Callable<Connection>> tasks = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        tasks.add(() -> client.connection(peer));
      }
      List<Future<Connection>> got = pool.invokeAll(tasks, WAIT.toSeconds(), TimeUnit.SECONDS);
      Connection first = got.get(0).get();
      for (Future<Connection> f : got) {
        assertSame(first, f.get(), "one connection per peer");
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(1, transport.connects());
    assertEquals(1, trackedPeers(client), "only the cached connection");
    client.disconnect(peer);
    assertEquals(0, trackedPeers(client));
  }

  @Test
  void aLongExpiredBackoffIsForgotten() throws Exception {
    Duration backoff = Duration.ofMinutes(1);
    ManualTime time = new ManualTime();
    TransferNode client =
        transport.start(
            TransferConfig.builder().peerBackoff(backoff).readTimeout(WAIT).build(), time);
    nodes.add(client);
    TransferNode server = node(TransferConfig.builder());
    InetSocketAddress peer = server.localAddress();
    transport.refuseConnections(peer, true);
    assertThrows(TransferConnectionException.class, () -> client.connection(peer));
    assertEquals(1, trackedPeers(client), "backing off from the peer");
    // The sweep that forgets run-out back-offs runs, but this one has not run out.
    time.advance(backoff.dividedBy(2));
    assertEquals(1, trackedPeers(client), "forgotten within the back-off");
    // Run out, it is kept as long again: a failure of the next attempt would double it.
    time.advance(backoff.dividedBy(2));
    assertEquals(1, trackedPeers(client), "forgotten as soon as it ran out");
    time.advance(backoff);
    assertEquals(
        0, trackedPeers(client), "the back-off was not forgotten a back-off after it ran out");
  }
}
