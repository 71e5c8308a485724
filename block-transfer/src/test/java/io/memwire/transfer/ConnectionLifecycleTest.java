package io.memwire.transfer;

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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The connection lifecycle on the in-memory provider: failure races, flow control and timeouts,
 * with the real {@link TransferNode} and {@link Connection} on top.
 */
class ConnectionLifecycleTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private InMemoryTransport transport;
  private final List<TransferNode> nodes = new ArrayList<>();
  private TransferNode server;
  private MemoryRegion region;
  private byte[] content;

  @BeforeEach
  void setUp() {
    transport = new InMemoryTransport();
    server = node(TransferConfig.builder());
    content = new byte[1 << 20];
    for (int i = 0; i < content.length; i++) {
      content[i] = (byte) (i * 31 + 7);
    }
    ByteBuffer mem = ByteBuffer.allocateDirect(content.length);
    mem.put(content).flip();
    region = TestRegions.register(server, mem);
  }

  @AfterEach
  void tearDown() {
    for (TransferNode n : nodes) {
      n.close();
    }
    for (TransferNode n : nodes) {
      TransferStats s = n.stats();
      assertEquals(0, s.poolBuffersOutstanding(), "pool buffers not returned: " + s);
      assertEquals(0, s.outstandingRequests(), "requests left outstanding: " + s);
      assertEquals(0, s.registeredRegions(), "regions left registered: " + s);
    }
    transport.close();
  }

  private TransferNode node(TransferConfigBuilder b) {
    TransferNode n = transport.start(b.build());
    nodes.add(n);
    return n;
  }

  private static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  private static TransferException failureOf(CompletableFuture<?> f) {
    ExecutionException e =
        assertThrows(
            ExecutionException.class,
            () -> f.get(WAIT.toSeconds(), TimeUnit.SECONDS),
            "the read neither completed nor failed (stranded)");
    return assertInstanceOf(TransferException.class, e.getCause());
  }

  private void assertBytes(TransferBuffer b, int offset) {
    ByteBuffer v = b.nioBuffer();
    assertEquals(b.length(), v.remaining());
    for (int i = 0; i < b.length(); i++) {
      if (v.get(v.position() + i) != content[offset + i]) {
        throw new AssertionError("byte " + i + " of a read at " + offset + " differs");
      }
    }
  }

  /**
   * Issue #14: a batch enqueued between the failure check in {@code read} and the enqueue, while an
   * in-flight read's failure drains the queue, used to stay queued forever. The in-memory transport
   * fails the connection right after {@code read}'s open check answered "open".
   */
  @Test
  void batchEnqueuedWhileTheConnectionFailsIsFailedNotStranded() throws Exception {
    TransferNode client = node(TransferConfig.builder());
    transport.script(r -> Action.hold());
    Connection c = client.connection(server.localAddress());
    CompletableFuture<TransferBuffer> first = c.read(ReadRequest.of(region.remote(), 0, 4096));
    PostedRead inFlight = transport.awaitHeld(1, WAIT).get(0);

    TransferConnectionException broken =
        new TransferConnectionException("peer vanished (scripted)", server.localAddress(), null);
    // Right after read() asked whether the connection is open, another thread fails it; read()
    // goes on once that thread has finished or waits on the connection's lock.
    AtomicReference<Thread> failer = new AtomicReference<>();
    transport.afterNextOpenCheck(
        () -> {
          Thread t = new Thread(() -> inFlight.failConnection(broken), "test-failer");
          failer.set(t);
          t.start();
          Await.until(
              () -> "the failing thread neither finished nor blocked: " + t.getState(),
              WAIT,
              () ->
                  t.getState() == Thread.State.TERMINATED || t.getState() == Thread.State.BLOCKED);
        });
    ReadBatch second =
        c.read(
            List.of(
                ReadRequest.of(region.remote(), 4096, 4096),
                ReadRequest.of(region.remote(), 8192, 4096)));

    assertTrue(failer.get() != null, "the failure did not land inside read()");
    failer.get().join(WAIT.toMillis());
    assertFalse(failer.get().isAlive());
    assertSame(broken, failureOf(first));
    assertSame(broken, failureOf(second.result(0)));
    assertSame(broken, failureOf(second.result(1)));
    assertEquals(0, c.outstanding());
    assertFalse(c.isOpen());
    assertEquals(1, transport.posted(), "nothing may be posted on a failed connection");

    // The node replaces the failed connection; the new one reads.
    transport.script(r -> Action.serve());
    Connection fresh = client.connection(server.localAddress());
    assertNotSame(c, fresh);
    TransferBuffer b = await(fresh.read(ReadRequest.of(region.remote(), 4096, 4096)));
    assertBytes(b, 4096);
    b.release();
  }

  /** Serves whatever is held until every future of {@code batch} has ended. */
  private void serveUntilDone(ReadBatch batch, int requests) {
    Await.until(
        () -> "batch did not finish; held " + transport.held(),
        WAIT,
        () -> {
          for (PostedRead p : transport.held()) {
            p.serve();
          }
          for (int i = 0; i < requests; i++) {
            if (!batch.result(i).isDone()) {
              return false;
            }
          }
          return true;
        });
  }

  @Test
  void neverPostsMoreReadsThanAllowedAndPostsTheRestAsReadsEnd() throws Exception {
    TransferNode client = node(TransferConfig.builder().maxOutstandingRequests(2));
    transport.script(r -> Action.hold());
    Connection c = client.connection(server.localAddress());
    List<ReadRequest> reqs = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      reqs.add(ReadRequest.of(region.remote(), i * 4096L, 4096));
    }
    ReadBatch batch = c.read(reqs);
    List<PostedRead> first = transport.awaitHeld(2, WAIT);
    assertEquals(2, transport.posted(), "only two reads may be in flight");
    assertEquals(6, c.outstanding());

    first.get(0).serve();
    TransferBuffer b0 = await(batch.result(0));
    assertBytes(b0, 0);
    b0.release();
    Await.until(
        () -> "the third read was not posted after the first ended: " + transport.posted(),
        WAIT,
        () -> transport.posted() == 3);
    assertEquals(2, transport.held().size());

    serveUntilDone(batch, 6);
    for (int i = 1; i < 6; i++) {
      TransferBuffer b = await(batch.result(i));
      assertBytes(b, i * 4096);
      b.release();
    }
    assertEquals(2, transport.maxInFlight());
    assertEquals(0, c.outstanding());
  }

  @Test
  void bytesInFlightStayWithinTheLimitAndAnOversizedReadGoesAlone() throws Exception {
    TransferNode client =
        node(TransferConfig.builder().maxOutstandingBytes(64 << 10).maxTransferSize(64 << 10));
    transport.script(r -> Action.hold());
    Connection c = client.connection(server.localAddress());
    ReadBatch batch =
        c.read(
            List.of(
                ReadRequest.of(region.remote(), 0, 32 << 10),
                ReadRequest.of(region.remote(), 32 << 10, 32 << 10),
                ReadRequest.of(region.remote(), 64 << 10, 32 << 10),
                ReadRequest.of(region.remote(), 128 << 10, 64 << 10)));
    transport.awaitHeld(2, WAIT);
    assertEquals(2, transport.posted(), "64 KiB in flight at most: two reads of 32 KiB");
    serveUntilDone(batch, 4);
    for (int i = 0; i < 3; i++) {
      TransferBuffer b = await(batch.result(i));
      assertBytes(b, i * (32 << 10));
      b.release();
    }
    TransferBuffer big = await(batch.result(3));
    assertBytes(big, 128 << 10);
    big.release();
    assertEquals(2, transport.maxInFlight());
  }

  @Test
  void anOverdueReadCarriesTheProvidersExplanation() throws Exception {
    ManualTime time = new ManualTime();
    TransferNode client =
        transport.start(TransferConfig.builder().readTimeout(Duration.ofSeconds(10)).build(), time);
    nodes.add(client);
    transport.script(r -> Action.hold());
    transport.stallDetail("; UDP 4791 unreachable: rxe0 port 1 sent 5 RoCE v2 packets");
    Connection c = client.connection(server.localAddress());
    CompletableFuture<TransferBuffer> read = c.read(ReadRequest.of(region.remote(), 0, 4096));
    transport.awaitHeld(1, WAIT);
    time.advance(Duration.ofSeconds(10).plusMillis(1));
    TransferException timeout = failureOf(read);
    assertInstanceOf(TransferTimeoutException.class, timeout);
    assertTrue(
        timeout
            .getMessage()
            .contains("did not complete within 10000 ms; UDP 4791 unreachable: rxe0 port 1 sent 5"),
        timeout.getMessage());
  }

  @Test
  void anOverdueReadFailsTheConnectionAndEverythingQueuedBehindIt() throws Exception {
    Duration readTimeout = Duration.ofSeconds(10);
    ManualTime time = new ManualTime();
    TransferNode client =
        transport.start(
            TransferConfig.builder().maxOutstandingRequests(1).readTimeout(readTimeout).build(),
            time);
    nodes.add(client);
    transport.script(r -> Action.hold());
    Connection c = client.connection(server.localAddress());
    ReadBatch batch =
        c.read(
            List.of(
                ReadRequest.of(region.remote(), 0, 4096),
                ReadRequest.of(region.remote(), 4096, 4096),
                ReadRequest.of(region.remote(), 8192, 4096)));
    PostedRead stuck = transport.awaitHeld(1, WAIT).get(0);

    // The timeout sweep runs, but the read is not overdue yet.
    time.advance(readTimeout.dividedBy(2));
    assertTrue(c.isOpen(), "failed before the read timeout");
    assertEquals(3, c.outstanding());
    assertEquals(0, client.stats().timeouts());

    time.advance(readTimeout.dividedBy(2).plusMillis(1));
    TransferException timeout = failureOf(batch.result(0));
    assertInstanceOf(TransferTimeoutException.class, timeout);
    assertTrue(
        timeout.getMessage().contains("did not complete within 10000 ms"), timeout.getMessage());
    assertSame(timeout, failureOf(batch.result(1)), "queued reads fail with the same cause");
    assertSame(timeout, failureOf(batch.result(2)));
    assertEquals(1, transport.posted());
    assertTrue(stuck.isEnded());
    assertEquals(0, c.outstanding());
    assertEquals(0, client.stats().poolBuffersOutstanding(), "destinations went back");

    // A late answer finds the read gone: nothing is copied.
    long servedBefore = transport.served();
    stuck.serve();
    transport.execute(() -> {});
    Await.until(() -> "in flight", WAIT, () -> transport.inFlight() == 0);
    assertEquals(servedBefore, transport.served());

    transport.script(r -> Action.serve());
    Connection fresh = client.connection(server.localAddress());
    assertNotSame(c, fresh);
    TransferBuffer b = await(fresh.read(ReadRequest.of(region.remote(), 8192, 4096)));
    assertBytes(b, 8192);
    b.release();
  }

  @Test
  void aRefusedReadFailsAloneAndTheConnectionStaysOpen() throws Exception {
    TransferNode client = node(TransferConfig.builder());
    transport.script(
        r ->
            r.offsetInSegment() == 4096
                ? Action.fail(
                    new RemoteAccessException(
                        RemoteAccessException.Reason.OUT_OF_BOUNDS,
                        "scripted",
                        region.remote().segments().get(0),
                        r.peer()))
                : Action.delay(Duration.ofMillis(r.offsetInSegment() == 0 ? 30 : 0)));
    Connection c = client.connection(server.localAddress());
    ReadBatch batch =
        c.read(
            List.of(
                ReadRequest.of(region.remote(), 0, 4096),
                ReadRequest.of(region.remote(), 4096, 4096),
                ReadRequest.of(region.remote(), 8192, 4096)));
    assertInstanceOf(RemoteAccessException.class, failureOf(batch.result(1)));
    TransferBuffer late = await(batch.result(0));
    assertBytes(late, 0);
    late.release();
    TransferBuffer b = await(batch.result(2));
    assertBytes(b, 8192);
    b.release();
    assertTrue(c.isOpen());
    assertSame(c, client.connection(server.localAddress()));
  }

  @Test
  void aReadOutsideTheRegionIsRefusedByTheInMemoryResponder() throws Exception {
    TransferNode client = node(TransferConfig.builder());
    Connection c = client.connection(server.localAddress());
    RegionDescriptor d = region.remote().segments().get(0);
    RegionDescriptor forged =
        new RegionDescriptor(d.provider(), d.node(), d.key() + 1, d.address(), d.length());
    RemoteAccessException e =
        assertInstanceOf(
            RemoteAccessException.class, failureOf(c.read(ReadRequest.of(forged, 0, 4096))));
    assertEquals(RemoteAccessException.Reason.UNKNOWN_KEY, e.reason());
    assertTrue(c.isOpen());
  }

  @Test
  void closingTheNodeFailsHeldReadsOnceAndReturnsTheirMemory() throws Exception {
    TransferNode client = transport.start(TransferConfig.builder().build());
    transport.script(r -> Action.hold());
    Connection c = client.connection(server.localAddress());
    ReadBatch batch =
        c.read(
            List.of(
                ReadRequest.of(region.remote(), 0, 4096),
                ReadRequest.of(region.remote(), 4096, 4096)));
    transport.awaitHeld(2, WAIT);
    client.close();
    TransferException e = failureOf(batch.result(0));
    assertInstanceOf(TransferConnectionException.class, e);
    assertSame(e, failureOf(batch.result(1)));
    assertEquals(0, client.stats().poolBuffersOutstanding());
    assertEquals(0, client.stats().outstandingRequests());
    assertEquals(0, transport.held().size());
  }
}
