package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.InMemoryTransport.Action;
import io.memwire.transfer.InMemoryTransport.PostedRead;
import io.memwire.transfer.testing.Await;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Outgoing connections closed after {@code connectionIdleTimeout}: one reader of 300 tcp peers ends
 * with no connection open, reconnects on the next read, and no read is ever lost to the reaper.
 */
class ConnectionReaperTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  private final List<TransferNode> nodes = new ArrayList<>();
  private final List<InMemoryTransport> transports = new ArrayList<>();

  @AfterEach
  void closeAll() {
    TransferContractTest.closeAndCheck(nodes);
    for (InMemoryTransport t : transports) {
      t.close();
    }
  }

  private TransferNode tcpNode(TransferConfigBuilder b) {
    TransferNode n =
        TransferNode.start(b.provider(ProviderKind.TCP).bindAddress("127.0.0.1").build());
    nodes.add(n);
    return n;
  }

  private InMemoryTransport transport() {
    InMemoryTransport t = new InMemoryTransport();
    transports.add(t);
    return t;
  }

  private TransferNode node(InMemoryTransport t, TransferConfigBuilder b) {
    TransferNode n = t.start(b.build());
    nodes.add(n);
    return n;
  }

  /** A node telling {@code sweeps} of each sweep of its reaper. */
  private TransferNode node(InMemoryTransport t, TransferConfigBuilder b, ReaperSweeps sweeps) {
    TransferNode n = t.start(b.build(), sweeps);
    nodes.add(n);
    return n;
  }

  /** A node whose reaper sweeps only when {@code time} is advanced, telling {@code sweeps}. */
  private TransferNode node(
      InMemoryTransport t, TransferConfigBuilder b, ManualTime time, ReaperSweeps sweeps) {
    TransferNode n = t.start(b.build(), time, sweeps);
    nodes.add(n);
    return n;
  }

  private static byte[] bytes(TransferBuffer b) {
    ByteBuffer v = b.nioBuffer();
    byte[] out = new byte[v.remaining()];
    v.get(out);
    return out;
  }

  private static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  /** Reads the whole of {@code region} from {@code reader} and checks its bytes. */
  private static void readAndCheck(TransferNode reader, RemoteRegion region, byte[] expected)
      throws Exception {
    TransferBuffer b =
        await(reader.connection(region.node()).read(ReadRequest.of(region, 0, expected.length)));
    try {
      assertArrayEquals(expected, bytes(b), "bytes read from " + region.node());
    } finally {
      b.release();
    }
  }

  @Test
  void oneNodeReadsFromThreeHundredPeersAndIdleConnectionsCloseToNone() throws Exception {
    int peers = 300;
    // Long, on a clock the test advances: "not before the timeout" holds however slow the reads.
    Duration idle = Duration.ofMinutes(5);
    Random random = new Random(300);
    List<TransferNode> servers = new ArrayList<>();
    List<RemoteRegion> regions = new ArrayList<>();
    List<byte[]> contents = new ArrayList<>();
    for (int i = 0; i < peers; i++) {
      // Small serving nodes, so 300 fit in one JVM: one I/O thread, the smallest budgets.
      TransferNode peer =
          tcpNode(
              TransferConfig.builder()
                  .ioThreads(1)
                  .registrationBudget(1 << 20)
                  .poolMaxBytes(1 << 20)
                  .connectionIdleTimeout(Duration.ZERO));
      byte[] data = TransferContractTest.random(random, 4096 + 16 * i);
      regions.add(TestRegions.register(peer, TransferContractTest.direct(data)).remote());
      contents.add(data);
      servers.add(peer);
    }
    ManualTime time = new ManualTime();
    TransferNode reader =
        time.start(
            TransferConfig.builder()
                .connectionIdleTimeout(idle)
                .provider(ProviderKind.TCP)
                .bindAddress("127.0.0.1")
                .build());
    nodes.add(reader);

    // One read per peer, all posted before any is awaited. The reaper sweeps only when the test
    // advances its clock, so all 300 are open at once.
    List<CompletableFuture<TransferBuffer>> reads = new ArrayList<>();
    for (int i = 0; i < peers; i++) {
      RemoteRegion r = regions.get(i);
      reads.add(reader.connection(r.node()).read(ReadRequest.of(r, 0, contents.get(i).length)));
    }
    assertEquals(peers, reader.stats().openConnections(), "no cap: " + reader.stats());
    for (int i = 0; i < peers; i++) {
      TransferBuffer b = await(reads.get(i));
      try {
        assertArrayEquals(contents.get(i), bytes(b), "read from peer " + i);
      } finally {
        b.release();
      }
    }
    TransferStats s = reader.stats();
    assertEquals(peers, s.readsCompleted(), s.toString());
    assertEquals(0, s.connectionErrors() + s.timeouts() + s.remoteAccessErrors(), s.toString());
    assertEquals(0, s.asMap().get("connectFailures"), s.toString());
    for (TransferNode peer : servers) {
      assertEquals(1, peer.stats().servedReads(), "each peer served its read: " + peer);
    }

    // Idle now: the first sweep past the timeout closes every connection, on both ends.
    time.advance(idle.dividedBy(2));
    assertEquals(peers, reader.stats().openConnections(), "reaped before the idle timeout");
    time.advance(idle);
    assertEquals(0, reader.stats().openConnections(), "open after the idle timeout");
    assertEquals(peers, reader.stats().connectionsReaped(), "each reaped once: " + reader.stats());
    Await.until(
        () -> "a peer still serves a reaped connection",
        WAIT,
        () -> servers.stream().allMatch(p -> p.stats().asMap().get("servingSessions") == 0));

    // The next read to a peer reconnects and gets its bytes.
    for (int i = 0; i < peers; i += 30) {
      readAndCheck(reader, regions.get(i), contents.get(i));
      assertEquals(2, servers.get(i).stats().servedReads());
    }
    s = reader.stats();
    assertEquals(peers + 10, s.readsCompleted(), s.toString());
    assertEquals(0, s.connectionErrors() + s.asMap().get("connectFailures"), s.toString());
  }

  @Test
  void aConnectionWithAReadOutstandingIsNotReaped() throws Exception {
    InMemoryTransport t = transport();
    TransferNode server = node(t, TransferConfig.builder().connectionIdleTimeout(Duration.ZERO));
    byte[] data = TransferContractTest.random(new Random(1), 64 << 10);
    MemoryRegion region = TestRegions.register(server, TransferContractTest.direct(data));
    Duration idle = Duration.ofMillis(100);
    ManualTime time = new ManualTime();
    ReaperSweeps sweeps = new ReaperSweeps();
    TransferNode client =
        node(t, TransferConfig.builder().connectionIdleTimeout(idle), time, sweeps);
    t.script(r -> Action.hold());
    Connection c = client.connection(server.localAddress());
    CompletableFuture<TransferBuffer> read = c.read(ReadRequest.of(region.remote(), 0, 4096));
    PostedRead held = t.awaitHeld(1, WAIT).get(0);

    // Sweeps well past the idle timeout: the connection stays.
    long before = sweeps.finished();
    time.advance(idle.multipliedBy(3));
    time.advance(idle.multipliedBy(3));
    assertEquals(before + 2, sweeps.finished(), "one sweep per advance");
    assertTrue(c.isOpen(), "a connection with a read in flight was reaped");
    assertEquals(0, client.stats().connectionsReaped());
    assertEquals(1, client.stats().openConnections());
    assertFalse(read.isDone());

    held.serve();
    TransferBuffer b = await(read);
    assertArrayEquals(java.util.Arrays.copyOf(data, 4096), bytes(b));
    b.release();

    // Idle from now on: the next sweep past the timeout reaps it, and the next connection(peer)
    // opens a fresh one.
    time.advance(idle);
    assertEquals(1, client.stats().connectionsReaped(), client.stats().toString());
    assertEquals(0, client.stats().openConnections(), client.stats().toString());
    assertFalse(c.isOpen());
    t.script(r -> Action.serve());
    Connection fresh = client.connection(server.localAddress());
    assertNotSame(c, fresh);
    TransferBuffer again = await(fresh.read(ReadRequest.of(region.remote(), 4096, 4096)));
    assertArrayEquals(java.util.Arrays.copyOfRange(data, 4096, 8192), bytes(again));
    again.release();
    assertEquals(2, t.connects());
    region.close();
  }

  /**
   * The reaper's decision is exclusive with the node handing a connection out: one handed out is
   * not retired within the timeout, one with a read is never retired, and a read on a retired one
   * fails at once, unsent, with the retryable {@link ConnectionReapedException}.
   */
  @Test
  void aClaimedConnectionIsNotRetiredAndAReadOnARetiredOneFailsUnsent() throws Exception {
    InMemoryTransport t = transport();
    TransferNode server = node(t, TransferConfig.builder());
    byte[] data = TransferContractTest.random(new Random(2), 16 << 10);
    MemoryRegion region = TestRegions.register(server, TransferContractTest.direct(data));
    // An hour: the node's own reaper stays out of this test, which drives the decisions itself.
    long idle = Duration.ofHours(1).toNanos();
    TransferNode client =
        node(t, TransferConfig.builder().connectionIdleTimeout(Duration.ofHours(1)));

    long before = System.nanoTime();
    Connection c = client.connection(server.localAddress());
    assertFalse(c.retireIfIdle(before + idle - 1, idle), "retired within the idle timeout");
    assertSame(c, client.connection(server.localAddress()));
    long claimedAgain = System.nanoTime();

    t.script(r -> Action.hold());
    CompletableFuture<TransferBuffer> inFlight = c.read(ReadRequest.of(region.remote(), 0, 4096));
    PostedRead held = t.awaitHeld(1, WAIT).get(0);
    assertFalse(c.retireIfIdle(Long.MAX_VALUE / 2, idle), "retired with a read in flight");
    held.serve();
    await(inFlight).release();

    long ended = System.nanoTime();
    assertFalse(c.retireIfIdle(claimedAgain + idle - 1, idle), "retired right after a read ended");
    assertTrue(c.retireIfIdle(ended + idle, idle), "idle for the timeout since the read ended");
    assertFalse(c.isOpen());
    assertFalse(c.claim(System.nanoTime()), "a retired connection cannot be handed out");

    long posted = t.posted();
    t.script(r -> Action.serve());
    ExecutionException e =
        assertThrows(
            ExecutionException.class,
            () ->
                c.read(ReadRequest.of(region.remote(), 0, 4096))
                    .get(WAIT.toSeconds(), TimeUnit.SECONDS));
    ConnectionReapedException reaped =
        assertInstanceOf(ConnectionReapedException.class, e.getCause());
    assertInstanceOf(TransferConnectionException.class, reaped);
    assertTrue(reaped.getMessage().contains("connectionIdleTimeout"), reaped.getMessage());
    assertEquals(posted, t.posted(), "nothing was sent on the retired connection");
    assertEquals(0, client.stats().outstandingRequests());

    // The retry the exception asks for.
    Connection fresh = client.connection(server.localAddress());
    assertNotSame(c, fresh);
    TransferBuffer b = await(fresh.read(ReadRequest.of(region.remote(), 0, 4096)));
    assertArrayEquals(java.util.Arrays.copyOf(data, 4096), bytes(b));
    b.release();
    region.close();
  }

  /**
   * Racing the reaper with the shortest idle timeout: a caller that takes the connection from the
   * node and reads at once either gets its bytes or, if it was descheduled past the timeout in
   * between, the retryable {@link ConnectionReapedException}; one that keeps the connection until a
   * sweep has passed always gets that exception. Every read ends and its retry works.
   */
  @Test
  void readsRacingAnEagerReaperEndAndOnlyEverFailRetryably() throws Exception {
    InMemoryTransport t = transport();
    TransferNode server = node(t, TransferConfig.builder());
    byte[] data = TransferContractTest.random(new Random(3), 64 << 10);
    MemoryRegion region = TestRegions.register(server, TransferContractTest.direct(data));
    Duration idle = Duration.ofMillis(1);
    ReaperSweeps sweeps = new ReaperSweeps();
    TransferNode client = node(t, TransferConfig.builder().connectionIdleTimeout(idle), sweeps);
    int reads = 400;
    int kept = 0;
    int retried = 0;
    for (int i = 0; i < reads; i++) {
      int off = (i % 16) * 4096;
      Connection c = client.connection(server.localAddress());
      long claimed = System.nanoTime();
      if (i % 40 == 39) {
        // Kept until a sweep that began past the idle timeout has finished: reaped by then.
        kept++;
        Await.until(
            () -> "no reaper sweep",
            WAIT,
            () -> sweeps.lastStartNanos() - claimed > idle.toNanos());
      }
      TransferBuffer b;
      try {
        b = await(c.read(ReadRequest.of(region.remote(), off, 4096)));
      } catch (ExecutionException e) {
        assertInstanceOf(ConnectionReapedException.class, e.getCause(), "only a retryable failure");
        retried++;
        b =
            await(
                client
                    .connection(server.localAddress())
                    .read(ReadRequest.of(region.remote(), off, 4096)));
      }
      assertArrayEquals(java.util.Arrays.copyOfRange(data, off, off + 4096), bytes(b));
      b.release();
    }
    TransferStats s = client.stats();
    assertEquals(reads, s.readsCompleted(), s.toString());
    assertTrue(retried >= kept, "every kept connection was reaped: " + retried + " of " + kept);
    assertTrue(s.connectionsReaped() >= kept, s.toString());
    assertEquals(retried, s.connectionErrors(), s.toString());
    assertEquals(0, s.outstandingRequests());
    region.close();
  }
}
