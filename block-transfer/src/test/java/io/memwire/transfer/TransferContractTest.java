package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The one-sided read contract every provider must meet. Subclasses only choose the provider (and
 * may skip when it is unavailable); the assertions are the same for tcp and verbs.
 */
public abstract class TransferContractTest {
  protected static final long WAIT_SECONDS = 60;

  @TempDir Path tmp;
  private final List<TransferNode> nodes = new ArrayList<>();

  /** The provider under test, with anything it needs (bind address, device). */
  protected abstract TransferConfigBuilder baseConfig();

  /** Starts a node; a subclass may start it on another transport (the in-memory one). */
  protected TransferNode startNode(TransferConfig config) {
    return TransferNode.start(config);
  }

  protected TransferNode node(TransferConfigBuilder b) {
    TransferNode n = startNode(b.build());
    nodes.add(n);
    return n;
  }

  protected TransferNode node() {
    return node(baseConfig());
  }

  @AfterEach
  void closeNodes() {
    closeAndCheck(nodes);
    nodes.clear();
  }

  /** Closes every node, then checks that each returned everything it held. */
  static void closeAndCheck(List<TransferNode> nodes) {
    for (TransferNode n : nodes) {
      n.close();
    }
    for (TransferNode n : nodes) {
      assertReleased(n);
    }
  }

  /** Everything a closed node held is returned. */
  protected static void assertReleased(TransferNode n) {
    TransferStats s = n.stats();
    assertEquals(0, s.registeredRegions(), "regions left registered: " + s);
    assertEquals(0, s.mappedSegments(), "mappings left: " + s);
    assertEquals(0, s.mappedBytes(), "mapped bytes left: " + s);
    assertEquals(0, s.poolBuffersOutstanding(), "pool buffers not returned: " + s);
    assertEquals(0, s.registeredBytes(), "registered bytes left: " + s);
    assertEquals(0, s.outstandingRequests(), "requests left outstanding: " + s);
    assertEquals(
        0, s.memoryBytes(), "registered-memory units left: " + n.memory().toVerboseString());
    assertTrue(n.memory().leakReports().isEmpty(), "leaks: " + n.memory().leakReports());
  }

  protected static byte[] random(Random r, int n) {
    byte[] b = new byte[n];
    r.nextBytes(b);
    return b;
  }

  protected static ByteBuffer direct(byte[] data) {
    ByteBuffer b = ByteBuffer.allocateDirect(data.length);
    b.put(data).flip();
    return b;
  }

  protected static byte[] bytes(TransferBuffer b) {
    ByteBuffer v = b.nioBuffer();
    byte[] out = new byte[v.remaining()];
    v.get(out);
    return out;
  }

  protected static byte[] slice(byte[] data, long off, int len) {
    byte[] out = new byte[len];
    System.arraycopy(data, (int) off, out, 0, len);
    return out;
  }

  protected static <T> T await(CompletableFuture<T> f) throws Exception {
    try {
      return f.get(WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof Exception) {
        throw (Exception) e.getCause();
      }
      throw e;
    }
  }

  /** Fails with the future's exception cause, asserting its type. */
  protected static <E extends Throwable> E awaitFailure(Class<E> type, CompletableFuture<?> f)
      throws InterruptedException, TimeoutException {
    try {
      Object v = f.get(WAIT_SECONDS, TimeUnit.SECONDS);
      if (v instanceof TransferBuffer) {
        ((TransferBuffer) v).release();
      }
      fail("expected " + type.getSimpleName() + " but the read succeeded");
      return null;
    } catch (ExecutionException e) {
      return assertInstanceOf(type, e.getCause(), "wrong failure type");
    }
  }

  private void readAndCompare(
      TransferNode reader, RemoteRegion remote, byte[] data, int count, int maxLen, Random r)
      throws Exception {
    Connection c = reader.connection(remote.node());
    List<ReadRequest> reqs = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      int len = 1 + r.nextInt(Math.min(maxLen, data.length));
      long off = (long) r.nextInt(data.length - len + 1);
      reqs.add(ReadRequest.of(remote, off, len));
    }
    ReadBatch batch = c.read(reqs);
    await(batch.all());
    for (int i = 0; i < reqs.size(); i++) {
      TransferBuffer b = await(batch.result(i));
      try {
        ReadRequest q = reqs.get(i);
        assertArrayEquals(slice(data, q.offset(), q.length()), bytes(b), "bytes of " + q);
      } finally {
        b.release();
      }
    }
  }

  @ParameterizedTest(name = "queue depth {0}")
  @ValueSource(ints = {1, 8, 64})
  void directRegionReadsReturnExactBytes(int depth) throws Exception {
    Random r = new Random(depth);
    byte[] data = random(r, 1 << 20);
    TransferNode server = node();
    TransferNode client = node(baseConfig().maxOutstandingRequests(depth));
    MemoryRegion region = TestRegions.register(server, direct(data));
    assertEquals(data.length, region.length());
    readAndCompare(client, region.remote(), data, 200, 64 << 10, r);
    assertEquals(200, client.stats().readsCompleted());
  }

  @Test
  void fileRegionSplitIntoSegmentsReadsAcrossBoundaries() throws Exception {
    Random r = new Random(7);
    byte[] data = random(r, 300_000);
    Path f = tmp.resolve("data.bin");
    Files.write(f, data);
    TransferNode server = node(baseConfig().maxSegmentSize(64 << 10));
    TransferNode client = node();
    MemoryRegion region = server.register(f, 0, data.length, server.memory());
    assertTrue(region.isFileBacked());
    assertEquals(5, region.descriptors().size(), "300000 bytes in 64 KiB segments");
    assertEquals(5, server.stats().mappedSegments());
    // Reads that straddle each boundary, then random ones.
    Connection c = client.connection(server.localAddress());
    List<ReadRequest> reqs = new ArrayList<>();
    for (int k = 1; k < 5; k++) {
      long boundary = (long) k * (64 << 10);
      reqs.add(ReadRequest.of(region.remote(), boundary - 100, 300));
      reqs.add(ReadRequest.of(region.remote(), boundary - 1, 2));
    }
    reqs.add(ReadRequest.of(region.remote(), 0, data.length));
    ReadBatch batch = c.read(reqs);
    for (int i = 0; i < reqs.size(); i++) {
      TransferBuffer b = await(batch.result(i));
      assertArrayEquals(slice(data, reqs.get(i).offset(), reqs.get(i).length()), bytes(b));
      b.release();
    }
    readAndCompare(client, region.remote(), data, 100, 200_000, r);
  }

  @Test
  void fileSubRangeRegistersOnlyThatRange() throws Exception {
    Random r = new Random(11);
    byte[] data = random(r, 100_000);
    Path f = tmp.resolve("range.bin");
    Files.write(f, data);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = server.register(f, 12_345, 50_000, server.memory());
    TransferBuffer b =
        await(
            client
                .connection(server.localAddress())
                .read(ReadRequest.of(region.remote(), 0, 50_000)));
    assertArrayEquals(slice(data, 12_345, 50_000), bytes(b));
    b.release();
    assertThrows(
        IllegalArgumentException.class, () -> server.register(f, 90_000, 20_000, server.memory()));
    assertThrows(IllegalArgumentException.class, () -> server.register(f, 0, 0, server.memory()));
  }

  @Test
  void readsLargerThanTheTransferSizeAreSplitAndReassembled() throws Exception {
    Random r = new Random(3);
    byte[] data = random(r, 3 << 20);
    TransferNode server = node();
    TransferNode client =
        node(
            baseConfig()
                .maxTransferSize(64 << 10)
                .maxOutstandingBytes(256 << 10)
                .maxOutstandingRequests(4));
    MemoryRegion region = TestRegions.register(server, direct(data));
    TransferBuffer b =
        await(
            client
                .connection(server.localAddress())
                .read(ReadRequest.of(region.remote(), 0, data.length)));
    assertArrayEquals(data, bytes(b));
    b.release();
  }

  @Test
  void readsLandInACallerOwnedRegisteredDestination() throws Exception {
    Random r = new Random(5);
    byte[] data = random(r, 200_000);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion source = TestRegions.register(server, direct(data));
    ByteBuffer destMemory = ByteBuffer.allocateDirect(300_000);
    MemoryRegion dest = TestRegions.register(client, destMemory);
    TransferBuffer b =
        await(
            client
                .connection(server.localAddress())
                .read(ReadRequest.of(source.remote(), 1000, 150_000).into(dest, 4096)));
    assertArrayEquals(slice(data, 1000, 150_000), bytes(b));
    b.release();
    byte[] landed = new byte[150_000];
    destMemory.duplicate().position(4096).get(landed);
    assertArrayEquals(slice(data, 1000, 150_000), landed);
    assertEquals(0, client.stats().poolBuffersOutstanding());
  }

  @Test
  void manyThreadsOnManyConnectionsGetTheirOwnBytes() throws Exception {
    int servers = 3;
    List<TransferNode> serving = new ArrayList<>();
    List<RemoteRegion> regions = new ArrayList<>();
    List<byte[]> contents = new ArrayList<>();
    for (int s = 0; s < servers; s++) {
      TransferNode n = node();
      for (int k = 0; k < 2; k++) {
        byte[] data = random(new Random(100 + s * 10 + k), 256 << 10);
        regions.add(TestRegions.register(n, direct(data)).remote());
        contents.add(data);
      }
      serving.add(n);
    }
    List<TransferNode> readers = List.of(node(), node());
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int id = t;
        results.add(
            pool.submit(
                () -> {
                  Random r = new Random(1000 + id);
                  TransferNode reader = readers.get(id % readers.size());
                  int checked = 0;
                  for (int round = 0; round < 20; round++) {
                    int which = r.nextInt(regions.size());
                    RemoteRegion region = regions.get(which);
                    byte[] data = contents.get(which);
                    List<ReadRequest> reqs = new ArrayList<>();
                    for (int i = 0; i < 16; i++) {
                      int len = 1 + r.nextInt(32 << 10);
                      reqs.add(ReadRequest.of(region, r.nextInt(data.length - len + 1), len));
                    }
                    ReadBatch batch = reader.connection(region.node()).read(reqs);
                    for (int i = 0; i < reqs.size(); i++) {
                      TransferBuffer b = batch.result(i).get(WAIT_SECONDS, TimeUnit.SECONDS);
                      try {
                        assertArrayEquals(
                            slice(data, reqs.get(i).offset(), reqs.get(i).length()), bytes(b));
                      } finally {
                        b.release();
                      }
                      checked++;
                    }
                  }
                  return checked;
                }));
      }
      int total = 0;
      for (Future<Integer> f : results) {
        total += f.get(WAIT_SECONDS * 2, TimeUnit.SECONDS);
      }
      assertEquals(8 * 20 * 16, total);
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS));
    }
  }

  @Test
  void anAfterReadSeesMemoryAsItWasOnceTheBodyReadsCompleted() throws Exception {
    Random r = new Random(21);
    byte[] data = random(r, 1 << 20);
    TransferNode server = node();
    // One read in flight: the body's later pieces, and the after read, go out only after the
    // first body request (64 pieces) completed.
    TransferNode client = node(baseConfig().maxTransferSize(4 << 10).maxOutstandingRequests(1));
    MemoryRegion body = TestRegions.register(server, direct(data));
    ByteBuffer wordMemory = direct(new byte[8]);
    MemoryRegion word = TestRegions.register(server, wordMemory);
    Connection c = client.connection(server.localAddress());
    int first = 256 << 10;
    List<ReadRequest> reqs =
        List.of(
            ReadRequest.of(body.remote(), 0, first),
            ReadRequest.of(body.remote(), first, data.length - first));
    Thread test = Thread.currentThread();
    boolean conclusive = false;
    // A loaded machine can deschedule this thread past the first body's completion many times
    // in a row; each try is cheap.
    for (int attempt = 1; attempt <= 100 && !conclusive; attempt++) {
      wordMemory.putLong(0, 0);
      long changed = 0x1122334455667700L + attempt;
      ReadBatch batch = c.read(reqs, ReadRequest.of(word.remote(), 0, 8));
      assertEquals(3, batch.size(), "two body futures and the after read's");
      // Written as the first body request completes, on the transport's thread: an after read
      // that went out with the body, ahead of that completion, would still see 0. (Run on this
      // thread, the callback came too late to tell anything: try again.)
      AtomicBoolean inCompletion = new AtomicBoolean();
      var unusedWriter =
          batch
              .result(0)
              .whenComplete(
                  (b, e) -> {
                    if (Thread.currentThread() != test) {
                      inCompletion.set(true);
                      wordMemory.putLong(0, changed);
                    }
                  });
      List<Boolean> bodyDoneFirst = new ArrayList<>();
      var unusedOrder =
          batch
              .result(2)
              .whenComplete(
                  (b, e) ->
                      bodyDoneFirst.add(batch.result(0).isDone() && batch.result(1).isDone()));
      long seen;
      TransferBuffer after = await(batch.result(2));
      try {
        seen = after.nioBuffer().order(java.nio.ByteOrder.BIG_ENDIAN).getLong(0);
      } finally {
        after.release();
      }
      for (int i = 0; i < reqs.size(); i++) {
        TransferBuffer b = await(batch.result(i));
        try {
          assertArrayEquals(slice(data, reqs.get(i).offset(), reqs.get(i).length()), bytes(b));
        } finally {
          b.release();
        }
      }
      assertEquals(List.of(true), bodyDoneFirst, "the after read ended behind every body read");
      conclusive = inCompletion.get();
      if (conclusive) {
        assertEquals(changed, seen, "the after read saw the word as it was before the body ended");
      }
    }
    assertTrue(
        conclusive,
        "in 100 tries the first body request never completed after its "
            + "callback was registered");
  }

  @Test
  void anAfterReadFailsWithItsBodyAndHoldsNothing() throws Exception {
    byte[] data = random(new Random(22), 64 << 10);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion body = TestRegions.register(server, direct(data));
    MemoryRegion word = TestRegions.register(server, direct(new byte[8]));
    RemoteRegion gone = body.remote();
    body.close();
    body.released().get(WAIT_SECONDS, TimeUnit.SECONDS);
    Connection c = client.connection(server.localAddress());
    ReadBatch batch =
        c.read(
            List.of(ReadRequest.of(gone, 0, 4096), ReadRequest.of(gone, 4096, 4096)),
            ReadRequest.of(word.remote(), 0, 8));
    RemoteAccessException bodyError = awaitFailure(RemoteAccessException.class, batch.result(0));
    awaitFailure(RemoteAccessException.class, batch.result(1));
    RemoteAccessException afterError = awaitFailure(RemoteAccessException.class, batch.result(2));
    assertTrue(
        afterError == bodyError || afterError.reason() == bodyError.reason(),
        "the after read fails with the body's error: " + afterError);
    awaitFailure(RemoteAccessException.class, batch.all());
    // Nothing of the failed batch stays pinned, and the connection goes on.
    TransferBuffer ok = await(c.read(List.of(), ReadRequest.of(word.remote(), 0, 8)).result(0));
    ok.release();
    assertEquals(0, client.stats().poolBuffersOutstanding());
    assertEquals(0, client.stats().outstandingRequests());
  }

  @Test
  void wrongKeyIsRefusedAndTheConnectionGoesOn() throws Exception {
    byte[] data = random(new Random(1), 64 << 10);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = TestRegions.register(server, direct(data));
    RegionDescriptor real = region.descriptors().get(0);
    RegionDescriptor forged =
        new RegionDescriptor(
            real.provider(),
            real.node(),
            real.key() ^ 0x5a5a5a5a5a5aL,
            real.address(),
            real.length());
    Connection c = client.connection(server.localAddress());
    RemoteAccessException e =
        awaitFailure(RemoteAccessException.class, c.read(ReadRequest.of(forged, 0, 100)));
    assertTrue(
        e.getMessage().contains(server.localAddress().getPort() + ""),
        "message names the peer: " + e.getMessage());
    assertEquals(forged, e.descriptor());
    TransferBuffer ok = await(c.read(ReadRequest.of(region.remote(), 10, 100)));
    assertArrayEquals(slice(data, 10, 100), bytes(ok));
    ok.release();
    assertEquals(1, client.stats().remoteAccessErrors());
  }

  @Test
  void readsOutsideTheRegionAreRefused() throws Exception {
    byte[] data = random(new Random(2), 64 << 10);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = TestRegions.register(server, direct(data));
    RegionDescriptor real = region.descriptors().get(0);
    Connection c = client.connection(server.localAddress());
    RegionDescriptor tooLong =
        new RegionDescriptor(
            real.provider(), real.node(), real.key(), real.address(), real.length() + 4096);
    awaitFailure(
        RemoteAccessException.class, c.read(ReadRequest.of(tooLong, real.length() - 10, 100)));
    RegionDescriptor before =
        new RegionDescriptor(
            real.provider(), real.node(), real.key(), real.address() - 4096, real.length());
    awaitFailure(RemoteAccessException.class, c.read(ReadRequest.of(before, 0, 100)));
    // Outside the descriptor itself: refused before anything is sent.
    assertThrows(
        IllegalArgumentException.class,
        () -> ReadRequest.of(region.remote(), real.length() - 10, 100));
    assertThrows(IllegalArgumentException.class, () -> ReadRequest.of(region.remote(), 0, 0));
    assertThrows(IllegalArgumentException.class, () -> ReadRequest.of(region.remote(), 0, -5));
    assertThrows(IllegalArgumentException.class, () -> ReadRequest.of(region.remote(), -1, 10));
    TransferBuffer ok = await(c.read(ReadRequest.of(region.remote(), 0, 10)));
    ok.release();
  }

  @Test
  void aClosedRegionIsNeverReadAgain() throws Exception {
    byte[] data = random(new Random(4), 128 << 10);
    Path f = tmp.resolve("closed.bin");
    Files.write(f, data);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = server.register(f, 0, data.length, server.memory());
    Connection c = client.connection(server.localAddress());
    TransferBuffer first = await(c.read(ReadRequest.of(region.remote(), 0, 1000)));
    first.release();
    region.close();
    assertTrue(!region.isOpen());
    region.close(); // idempotent
    region.released().get(WAIT_SECONDS, TimeUnit.SECONDS);
    assertEquals(0, server.stats().registeredRegions());
    awaitFailure(RemoteAccessException.class, c.read(ReadRequest.of(region.remote(), 0, 1000)));
    assertEquals(0, server.stats().mappedSegments(), "closing unmapped the file");
  }

  @Test
  void heapBuffersAndEmptyBuffersAreRefused() {
    TransferNode server = node();
    RegistrationException e =
        assertThrows(
            RegistrationException.class,
            () -> TestRegions.register(server, ByteBuffer.allocate(100)));
    assertTrue(e.getMessage().contains("heap"), e.getMessage());
    assertThrows(
        RegistrationException.class,
        () -> TestRegions.register(server, ByteBuffer.allocateDirect(0)));
  }

  @Test
  void theRegistrationBudgetIsEnforced() throws Exception {
    TransferNode server = node(baseConfig().registrationBudget(2 << 20).poolMaxBytes(1 << 20));
    MemoryRegion a = TestRegions.register(server, ByteBuffer.allocateDirect(1536 << 10));
    RegistrationException e =
        assertThrows(
            RegistrationException.class,
            () -> TestRegions.register(server, ByteBuffer.allocateDirect(1 << 20)));
    assertTrue(e.getMessage().contains("registrationBudget"), e.getMessage());
    a.close();
    TestRegions.register(server, ByteBuffer.allocateDirect(1 << 20)).close();
  }

  @Test
  void peerGoingAwayFailsEveryOutstandingReadAndReconnectWorks() throws Exception {
    byte[] data = random(new Random(9), 4 << 20);
    TransferNode server = node();
    TransferNode client =
        node(
            baseConfig()
                .maxOutstandingRequests(2)
                .maxTransferSize(64 << 10)
                .maxOutstandingBytes(128 << 10));
    MemoryRegion region = TestRegions.register(server, direct(data));
    InetSocketAddress address = server.localAddress();
    Connection c = client.connection(address);
    List<ReadRequest> reqs = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      reqs.add(ReadRequest.of(region.remote(), 0, data.length));
    }
    ReadBatch batch = c.read(reqs);
    server.close();
    int failed = 0;
    for (CompletableFuture<TransferBuffer> f : batch.results()) {
      try {
        TransferBuffer b = f.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertArrayEquals(data, bytes(b), "a read that succeeded has all its bytes");
        b.release();
      } catch (ExecutionException e) {
        assertTrue(
            e.getCause() instanceof TransferConnectionException
                || e.getCause() instanceof RemoteAccessException,
            "unexpected " + e.getCause());
        failed++;
      }
    }
    assertTrue(failed > 0, "closing the server mid-batch failed some reads");
    assertEquals(0, client.stats().outstandingRequests());
    assertEquals(0, client.stats().poolBuffersOutstanding());

    // A new server on the same address: the client reconnects on its next read.
    TransferNode again = node(baseConfig().port(address.getPort()));
    MemoryRegion region2 = TestRegions.register(again, direct(data));
    TransferBuffer b =
        await(client.connection(address).read(ReadRequest.of(region2.remote(), 100, 1000)));
    assertArrayEquals(slice(data, 100, 1000), bytes(b));
    b.release();
  }

  @Test
  void connectingToNothingFailsWithAConnectionError() throws Exception {
    TransferNode client = node(baseConfig().connectTimeout(java.time.Duration.ofSeconds(2)));
    InetSocketAddress nowhere;
    try (java.net.ServerSocket s =
        new java.net.ServerSocket(
            0,
            1,
            java.net.InetAddress.getByName(client.localAddress().getAddress().getHostAddress()))) {
      nowhere = new InetSocketAddress(s.getInetAddress(), s.getLocalPort());
    }
    TransferException e = assertThrows(TransferException.class, () -> client.connection(nowhere));
    assertTrue(e instanceof TransferConnectionException || e instanceof TransferTimeoutException);
    assertTrue(e.getMessage().contains(String.valueOf(nowhere.getPort())), e.getMessage());
  }

  @Test
  void everyCounterTheNodeReportsIsDeclared() throws Exception {
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion r = TestRegions.register(server, direct(random(new Random(5), 1000)));
    await(client.connection(server.localAddress()).read(ReadRequest.of(r.remote(), 0, 1000)))
        .release();
    for (TransferNode n : List.of(server, client)) {
      for (String key : n.stats().asMap().keySet()) {
        assertTrue(
            io.memwire.transfer.metrics.TransportMetrics.find(key) != null,
            "declare " + key + " in TransportMetrics");
      }
    }
  }

  @Test
  void aReadBufferHeldAtNodeCloseIsReportedAsALeakOfTheReadPool() throws Exception {
    byte[] data = random(new Random(13), 10_000);
    TransferNode server = node();
    TransferNode client = startNode(baseConfig().build()); // not node(): it is meant to leak
    MemoryRegion r = TestRegions.register(server, direct(data));
    TransferBuffer kept =
        await(client.connection(server.localAddress()).read(ReadRequest.of(r.remote(), 0, 5000)));
    TransferBuffer gone =
        await(
            client.connection(server.localAddress()).read(ReadRequest.of(r.remote(), 5000, 3000)));
    gone.release();
    TransferStats s = client.stats();
    assertEquals(5000, s.memoryBytes(TransferNode.READ_POOL), s.toString());
    assertEquals(8000, s.memoryPeakBytes(TransferNode.READ_POOL), s.toString());
    client.close();

    List<io.memwire.transfer.memory.LeakReport> leaks = client.memory().leakReports();
    assertEquals(1, leaks.size(), leaks.toString());
    assertEquals(client.memory().name() + "/" + TransferNode.READ_POOL, leaks.get(0).allocator());
    assertEquals(5000, leaks.get(0).bytes());
    assertSame(kept.unit(), leaks.get(0).units().get(0));
    assertArrayEquals(slice(data, 0, 5000), bytes(kept), "a leaked buffer stays readable");
    assertTrue(kept.release());
    assertEquals(0, client.stats().memoryBytes());
    assertEquals(0, client.stats().poolBuffersOutstanding());
  }

  @Test
  void closingTheNodeReturnsEverythingAndStopsItsThreads() throws Exception {
    byte[] data = random(new Random(12), 512 << 10);
    Path f = tmp.resolve("hygiene.bin");
    Files.write(f, data);
    TransferNode server = node(baseConfig().maxSegmentSize(128 << 10));
    TransferNode client = node();
    server.register(f, 0, data.length, server.memory());
    MemoryRegion r2 = TestRegions.register(server, direct(data));
    List<TransferBuffer> held = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      held.add(
          await(
              client
                  .connection(server.localAddress())
                  .read(ReadRequest.of(r2.remote(), i * 1000L, 50_000))));
    }
    assertEquals(10, client.stats().poolBuffersOutstanding());
    held.forEach(TransferBuffer::release);
    assertEquals(0, client.stats().poolBuffersOutstanding());
    assertTrue(server.stats().mappedSegments() == 4);
    client.close();
    server.close();
    assertReleased(client);
    assertReleased(server);
    assertThrows(IllegalStateException.class, () -> TestRegions.register(server, direct(data)));
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("memwire-") && t.isAlive() && !t.isDaemon()) {
        fail("non-daemon thread left running: " + t.getName());
      }
    }
  }

  /** Reads the whole of a file through a second node: used by subclasses for smoke checks. */
  protected byte[] readAll(TransferNode reader, RemoteRegion region) throws Exception {
    TransferBuffer b =
        await(
            reader
                .connection(region.node())
                .read(ReadRequest.of(region, 0, (int) region.length())));
    try {
      return bytes(b);
    } finally {
      b.release();
    }
  }

  protected Path writeFile(String name, byte[] data) throws IOException {
    Path f = tmp.resolve(name);
    Files.write(f, data);
    return f;
  }
}
