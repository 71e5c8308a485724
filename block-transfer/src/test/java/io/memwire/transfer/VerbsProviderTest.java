package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.settings.FabricSettings;
import io.memwire.transfer.testing.Await;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What only verbs has: NIC-level access errors, rkeys, queue-pair recovery, teardown. */
class VerbsProviderTest {
  private final List<TransferNode> nodes = new ArrayList<>();
  @TempDir Path tmp;

  @BeforeEach
  void requireVerbs() {
    VerbsTransferContractTest.assumeVerbs();
  }

  @AfterEach
  void close() {
    nodes.forEach(TransferNode::close);
    nodes.forEach(TransferContractTest::assertReleased);
  }

  private TransferNode node() {
    TransferNode n = TransferNode.start(VerbsTransferContractTest.verbsConfig().build());
    nodes.add(n);
    assertEquals(ProviderKind.VERBS, n.provider());
    return n;
  }

  private static byte[] bytes(TransferBuffer b) {
    ByteBuffer v = b.nioBuffer();
    byte[] out = new byte[v.remaining()];
    v.get(out);
    return out;
  }

  @Test
  void aDeregisteredRegionGivesTheRemoteAccessErrorNotStaleBytes() throws Exception {
    byte[] data = TransferContractTest.random(new Random(1), 256 << 10);
    ByteBuffer memory = TransferContractTest.direct(data);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = TestRegions.register(server, memory);
    RegionDescriptor d = region.descriptors().get(0);
    assertEquals(0, d.key() >>> 32, "the descriptor carries a 32-bit rkey");
    Connection c = client.connection(server.localAddress());
    TransferBuffer first =
        c.read(ReadRequest.of(region.remote(), 0, 4096)).get(60, TimeUnit.SECONDS);
    assertArrayEquals(Arrays.copyOf(data, 4096), bytes(first));
    first.release();

    region.close(); // the memory itself stays allocated and unchanged: only the MR is gone
    ExecutionException e =
        assertThrows(
            ExecutionException.class,
            () -> c.read(ReadRequest.of(region.remote(), 0, 4096)).get(60, TimeUnit.SECONDS));
    RemoteAccessException rae = assertInstanceOf(RemoteAccessException.class, e.getCause());
    assertEquals(RemoteAccessException.Reason.ACCESS_ERROR, rae.reason());
    assertEquals(d, rae.descriptor());
    assertEquals(1, client.stats().remoteAccessErrors());
    assertEquals(0, client.stats().poolBuffersOutstanding(), "no buffer of a failed read leaked");
    memory.clear();
    byte[] still = new byte[4096];
    memory.get(still);
    assertArrayEquals(Arrays.copyOf(data, 4096), still, "the bytes were there to be stolen");
  }

  @Test
  void oneRefusedReadInABatchFailsAloneAndTheReadsBehindItStillArrive() throws Exception {
    byte[] data = TransferContractTest.random(new Random(2), 512 << 10);
    ByteBuffer memory = TransferContractTest.direct(data);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = TestRegions.register(server, memory);
    RegionDescriptor real = region.descriptors().get(0);
    RegionDescriptor forged =
        new RegionDescriptor(
            real.provider(), real.node(), real.key() ^ 0x00ff00ffL, real.address(), real.length());
    List<ReadRequest> reqs = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      reqs.add(
          i == 5
              ? ReadRequest.of(forged, 0, 1000)
              : ReadRequest.of(region.remote(), i * 16_000L, 16_000));
    }
    ReadBatch batch = client.connection(server.localAddress()).read(reqs);
    for (int i = 0; i < reqs.size(); i++) {
      if (i == 5) {
        ExecutionException e =
            assertThrows(ExecutionException.class, () -> batch.result(5).get(60, TimeUnit.SECONDS));
        assertInstanceOf(RemoteAccessException.class, e.getCause());
        continue;
      }
      TransferBuffer b = batch.result(i).get(60, TimeUnit.SECONDS);
      assertArrayEquals(
          Arrays.copyOfRange(data, i * 16_000, i * 16_000 + 16_000), bytes(b), "read " + i);
      b.release();
    }
    TransferStats s = client.stats();
    assertEquals(23, s.readsCompleted());
    assertEquals(1, s.remoteAccessErrors());
    assertTrue(s.asMap().get("verbsReconnects") >= 1, "the queue pair was re-established: " + s);
  }

  /**
   * Reads that a completion lets go are posted together: a long batch goes out in chains of up to
   * the queue depth (one post call, one signaled request each), not one post per read, and every
   * read still lands its own bytes (the reused work requests are rewritten correctly).
   */
  @Test
  void aLongBatchIsPostedInChainsAndEveryReadGetsItsOwnBytes() throws Exception {
    byte[] data = TransferContractTest.random(new Random(3), 1 << 20);
    ByteBuffer memory = TransferContractTest.direct(data);
    TransferNode server = node();
    TransferNode client =
        TransferNode.start(
            VerbsTransferContractTest.verbsConfig().maxOutstandingRequests(16).build());
    nodes.add(client);
    MemoryRegion region = TestRegions.register(server, memory);
    int reads = 240;
    int size = 4096;
    List<ReadRequest> reqs = new ArrayList<>();
    for (int i = 0; i < reads; i++) {
      reqs.add(ReadRequest.of(region.remote(), (i * 7L % 256) * size, size));
    }
    ReadBatch batch = client.connection(server.localAddress()).read(reqs);
    for (int i = 0; i < reads; i++) {
      TransferBuffer b = batch.result(i).get(120, TimeUnit.SECONDS);
      int off = (int) (i * 7L % 256) * size;
      assertArrayEquals(Arrays.copyOfRange(data, off, off + size), bytes(b), "read " + i);
      b.release();
    }
    java.util.Map<String, Long> s = client.stats().asMap();
    assertEquals(reads, s.get("verbsPostedReads"), s.toString());
    assertTrue(
        s.get("verbsPostCalls") * 4 <= reads,
        "reads freed by one completion go out as one chain: " + s);
    assertTrue(s.get("verbsCompletions") * 4 <= reads, "one signaled request per chain: " + s);
  }

  @Test
  void keysAreRkeysAndDifferPerRegion() {
    TransferNode server = node();
    MemoryRegion a = TestRegions.register(server, ByteBuffer.allocateDirect(8192));
    MemoryRegion b = TestRegions.register(server, ByteBuffer.allocateDirect(8192));
    long ka = a.descriptors().get(0).key();
    long kb = b.descriptors().get(0).key();
    assertNotEquals(ka, kb);
    assertEquals(0, ka >>> 32);
    assertEquals(2L, server.stats().asMap().get("verbsRegistrations"));
    a.close();
    b.close();
    assertEquals(0L, server.stats().asMap().get("verbsRegistrations"));
  }

  /** Linux before 6.2 cannot pin a read-only shared file mapping for RDMA. */
  private static boolean kernelPinsReadOnlyMappings() {
    String[] v = System.getProperty("os.version").split("[.-]");
    int major = Integer.parseInt(v[0]);
    int minor = v.length > 1 ? Integer.parseInt(v[1]) : 0;
    return major > 6 || (major == 6 && minor >= 2);
  }

  private static long counter(TransferNode n, String name) {
    Long v = n.stats().asMap().get(name);
    assertTrue(v != null, "no counter " + name + " in " + n.stats().asMap());
    return v;
  }

  @Test
  void fileRegionsAreRegisteredWithoutACopyAndTheFileStaysUntouched() throws Exception {
    byte[] data = TransferContractTest.random(new Random(7), (3 << 20) + 4321);
    Path f = tmp.resolve("map-output.data");
    Files.write(f, data);
    FileTime past = FileTime.fromMillis(System.currentTimeMillis() - 3_600_000L);
    Files.setLastModifiedTime(f, past);
    TransferNode server =
        TransferNode.start(VerbsTransferContractTest.verbsConfig().maxSegmentSize(1 << 20).build());
    nodes.add(server);
    TransferNode client = node();
    int offset = 1000; // not page aligned
    int length = data.length - offset;
    MemoryRegion region = server.register(f, offset, length, server.memory());
    assertEquals(4, region.descriptors().size(), "four segments of at most 1 MiB");
    TransferBuffer b =
        client
            .connection(server.localAddress())
            .read(ReadRequest.of(region.remote(), 0, length))
            .get(120, TimeUnit.SECONDS);
    try {
      assertArrayEquals(Arrays.copyOfRange(data, offset, data.length), bytes(b));
    } finally {
      b.release();
    }
    assertEquals(0, counter(server, "verbsFileRegionsPrivateCopy"), "no private copy");
    assertEquals(0, counter(server, "verbsFileCopyBytes"));
    long readOnly = counter(server, "verbsFileRegionsReadOnlyMapping");
    long shared = counter(server, "verbsFileRegionsSharedMapping");
    assertEquals(4, readOnly + shared);
    if (kernelPinsReadOnlyMappings()) {
      assertEquals(4, readOnly, "Linux >= 6.2 pins the read-only mapping itself");
    } else {
      assertEquals(4, shared, "Linux < 6.2: read-write shared mappings, registered read-only");
    }
    region.close();
    server.close();
    assertEquals(past, Files.getLastModifiedTime(f), "the file's mtime is unchanged");
    assertArrayEquals(data, Files.readAllBytes(f), "the file's content is unchanged");
  }

  /**
   * A file this process may not write falls back to the private copy (on kernels that cannot pin
   * read-only mappings). As root, permissions do not stop writes, so the guest run passes a file on
   * a read-only bind mount in {@code memwire.test.verbs.readOnlyFile}.
   */
  @Test
  void anUnwritableFileIsServedFromAPrivateCopy() throws Exception {
    Assumptions.assumeFalse(
        kernelPinsReadOnlyMappings(), "this kernel pins read-only mappings: no fallback needed");
    String given = System.getProperty("memwire.test.verbs.readOnlyFile");
    Path f;
    byte[] data;
    if (given != null && !given.isBlank()) {
      f = Path.of(given);
      data = Files.readAllBytes(f);
    } else {
      data = TransferContractTest.random(new Random(8), 100_000);
      f = tmp.resolve("read-only.data");
      Files.write(f, data);
      Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("r--r--r--"));
    }
    Assumptions.assumeFalse(Files.isWritable(f), "this process may write " + f + " (root?)");
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion region = server.register(f, 0, data.length, server.memory());
    TransferBuffer b =
        client
            .connection(server.localAddress())
            .read(ReadRequest.of(region.remote(), 0, data.length))
            .get(120, TimeUnit.SECONDS);
    try {
      assertArrayEquals(data, bytes(b));
    } finally {
      b.release();
    }
    Map<String, Long> s = server.stats().asMap();
    assertEquals(1L, s.get("verbsFileRegionsPrivateCopy"), s.toString());
    assertEquals((long) data.length, s.get("verbsFileCopyBytes"), s.toString());
    assertEquals(0L, s.get("verbsFileRegionsSharedMapping"), s.toString());
    region.close();
  }

  @Test
  void withASecretOnlyAuthenticatedPeersConnect() throws Exception {
    byte[] data = TransferContractTest.random(new Random(9), 64 << 10);
    TransferNode server =
        TransferNode.start(
            VerbsTransferContractTest.verbsConfig()
                .authSecret("s3cret".getBytes(StandardCharsets.UTF_8))
                .build());
    nodes.add(server);
    MemoryRegion region = TestRegions.register(server, TransferContractTest.direct(data));

    // The right secret: the handshake admits the connect request, the read returns the bytes.
    TransferNode good =
        TransferNode.start(
            VerbsTransferContractTest.verbsConfig()
                .authSecret("s3cret".getBytes(StandardCharsets.UTF_8))
                .build());
    nodes.add(good);
    TransferBuffer b =
        good.connection(server.localAddress())
            .read(ReadRequest.of(region.remote(), 0, data.length))
            .get(60, TimeUnit.SECONDS);
    try {
      assertArrayEquals(data, bytes(b));
    } finally {
      b.release();
    }
    assertEquals(1L, server.stats().asMap().get("verbsAuthAccepted"));
    assertEquals(1L, server.stats().asMap().get("verbsAcceptedTotal"));

    // No secret: the server's handshake says it requires one, before any RDMA connect request.
    TransferNode none = node();
    TransferConnectionException missing =
        assertThrows(
            TransferConnectionException.class, () -> none.connection(server.localAddress()));
    assertTrue(
        missing.getMessage().contains("the peer requires verbs authentication"),
        missing.getMessage());
    assertEquals(0L, server.stats().asMap().get("verbsAuthRefusedRequests"));

    // A wrong secret: the handshake fails before any RDMA connect request.
    TransferNode wrong =
        TransferNode.start(
            VerbsTransferContractTest.verbsConfig()
                .authSecret("guess".getBytes(StandardCharsets.UTF_8))
                .build());
    nodes.add(wrong);
    TransferConnectionException bad =
        assertThrows(
            TransferConnectionException.class, () -> wrong.connection(server.localAddress()));
    assertTrue(bad.getMessage().contains("authentication failed"), bad.getMessage());
    Map<String, Long> s = server.stats().asMap();
    assertEquals(1L, s.get("verbsAcceptedTotal"), "only the authenticated peer got a QP: " + s);
    assertEquals(0L, s.get("verbsAuthRefusedRequests"), s.toString());
    region.close();
  }

  /**
   * Without a secret a verbs node answers the open MTU handshake on TCP at its port's number; with
   * {@code mtuHandshake=false} it opens no TCP port, and readers that ask (no answer: MTU unknown)
   * and that do not ask both still read.
   */
  @Test
  void withoutASecretTheMtuHandshakePortListensUnlessTurnedOff() throws Exception {
    byte[] data = TransferContractTest.random(new Random(11), 64 << 10);
    TransferNode open = node();
    TransferNode closed = nodeWithoutMtuHandshake();
    assertTrue(listensInTcp(open.localAddress()), "the open handshake's port");
    assertFalse(listensInTcp(closed.localAddress()), "mtuHandshake=false opens no TCP port");
    MemoryRegion region = TestRegions.register(closed, TransferContractTest.direct(data));
    TransferNode quiet = nodeWithoutMtuHandshake();
    readAndCheck(quiet, region.remote(), data);
    readAndCheck(node(), region.remote(), data);
    region.close();
  }

  private TransferNode nodeWithoutMtuHandshake() {
    TransferNode n =
        TransferNode.start(
            VerbsTransferContractTest.verbsConfig()
                .set(FabricSettings.MTU_HANDSHAKE, false)
                .build());
    nodes.add(n);
    return n;
  }

  private static boolean listensInTcp(InetSocketAddress at) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(at, 5000);
      return true;
    } catch (ConnectException refused) {
      return false;
    }
  }

  /** Runs {@code body} with the JVM system property {@code name} set, then restores it. */
  private static <T> T withProperty(String name, String value, Callable<T> body) throws Exception {
    String old = System.getProperty(name);
    System.setProperty(name, value);
    try {
      return body.call();
    } finally {
      if (old == null) {
        System.clearProperty(name);
      } else {
        System.setProperty(name, old);
      }
    }
  }

  private static final String CQ_ENTRIES = "memwire.verbs.cqEntries";
  private static final String MAX_CQS = "memwire.verbs.maxCompletionQueues";

  /**
   * Starts {@code n} serving nodes with small completion queues (into {@code started}), each with
   * one region of its own (its bytes into {@code contents}); returns the regions.
   */
  private List<RemoteRegion> servers(int n, List<byte[]> contents, List<TransferNode> started)
      throws Exception {
    return withProperty(
        CQ_ENTRIES,
        "16",
        () -> {
          List<RemoteRegion> regions = new ArrayList<>();
          Random random = new Random(n);
          for (int i = 0; i < n; i++) {
            TransferNode server =
                TransferNode.start(
                    VerbsTransferContractTest.verbsConfig()
                        .registrationBudget(1 << 20)
                        .poolMaxBytes(1 << 20)
                        .connectionIdleTimeout(Duration.ZERO)
                        .build());
            nodes.add(server);
            started.add(server);
            byte[] data = TransferContractTest.random(random, 4096 + 16 * i);
            contents.add(data);
            regions.add(TestRegions.register(server, TransferContractTest.direct(data)).remote());
          }
          return regions;
        });
  }

  private static void readAndCheck(TransferNode reader, RemoteRegion region, byte[] expected)
      throws Exception {
    TransferBuffer b =
        reader
            .connection(region.node())
            .read(ReadRequest.of(region, 0, expected.length))
            .get(120, TimeUnit.SECONDS);
    try {
      assertArrayEquals(expected, bytes(b), "bytes from " + region.node());
    } finally {
      b.release();
    }
  }

  /**
   * Issue #16: one node reads from many verbs peers (300 unless {@code memwire.test.verbs.peers}
   * says otherwise) with completion queues of 99 queue pairs (1600 entries at depth 16), so the
   * queue pairs spread over several queues instead of being refused past the first; idle, every
   * queue pair closes, on both ends, and the extra queues with them; the next read reconnects.
   */
  @Test
  void oneNodeReadsFromHundredsOfPeersOverSeveralCompletionQueuesAndIdlesToNone() throws Exception {
    int peers = Integer.getInteger("memwire.test.verbs.peers", 300);
    List<byte[]> contents = new ArrayList<>();
    List<TransferNode> servers = new ArrayList<>();
    List<RemoteRegion> regions = servers(peers, contents, servers);
    Duration idle = Duration.ofSeconds(5);
    TransferNode reader =
        withProperty(
            CQ_ENTRIES,
            "1600",
            () ->
                TransferNode.start(
                    VerbsTransferContractTest.verbsConfig()
                        .maxOutstandingRequests(16)
                        .connectionIdleTimeout(idle)
                        .build()));
    nodes.add(reader);
    long perQueue = counter(reader, "verbsQueuePairsPerCompletionQueue");
    List<CompletableFuture<TransferBuffer>> reads = new ArrayList<>();
    for (int i = 0; i < peers; i++) {
      RemoteRegion r = regions.get(i);
      reads.add(reader.connection(r.node()).read(ReadRequest.of(r, 0, contents.get(i).length)));
      for (int j = 0; j < i; j++) {
        reader.connection(regions.get(j).node()); // in use: none idles while the rest connect
      }
    }
    TransferStats s = reader.stats();
    // A connect slower than the idle timeout (an emulated device under load) may reap and reopen
    // connections while the rest connect: count only what the idle phase below closes.
    long reapedWhileConnecting = s.connectionsReaped();
    assertEquals(peers, s.openConnections(), s.toString());
    assertEquals((long) peers, s.asMap().get("verbsQueuePairs"), s.toString());
    assertEquals((peers + perQueue - 1) / perQueue, counter(reader, "verbsCompletionQueues"));
    assertEquals(0, counter(reader, "verbsConnectionsRefused"));
    for (int i = 0; i < peers; i++) {
      TransferBuffer b = reads.get(i).get(120, TimeUnit.SECONDS);
      try {
        assertArrayEquals(contents.get(i), bytes(b), "read from peer " + i);
      } finally {
        b.release();
      }
    }
    s = reader.stats();
    assertEquals(peers, s.readsCompleted(), s.toString());
    assertEquals(0, s.connectionErrors() + s.timeouts() + s.remoteAccessErrors(), s.toString());

    Await.until(
        () -> "queue pairs left after the idle timeout: " + reader.stats(),
        Duration.ofSeconds(120),
        () -> {
          TransferStats now = reader.stats();
          return now.openConnections() == 0
              && now.connectionsReaped() - reapedWhileConnecting >= peers
              && now.asMap().get("verbsQueuePairs") == 0
              && now.asMap().get("verbsCompletionQueues") == 1;
        });
    assertEquals(
        peers,
        reader.stats().connectionsReaped() - reapedWhileConnecting,
        reader.stats().toString());
    for (TransferNode server : servers) {
      Await.until(
          () -> "a peer still holds the reaped queue pair: " + server.stats(),
          Duration.ofSeconds(120),
          () -> server.stats().asMap().get("verbsAcceptedPeers") == 0);
    }
    for (int i = 0; i < peers; i += Math.max(1, peers / 10)) {
      readAndCheck(reader, regions.get(i), contents.get(i));
    }
  }

  @Test
  void pastTheLastCompletionQueueAConnectionIsRefusedClearlyAndCounted() throws Exception {
    List<byte[]> contents = new ArrayList<>();
    List<RemoteRegion> regions = servers(3, contents, new ArrayList<>());
    // One queue pair per completion queue, two queues: two connections at most.
    TransferNode reader =
        withProperty(
            CQ_ENTRIES,
            "1",
            () ->
                withProperty(
                    MAX_CQS,
                    "2",
                    () ->
                        TransferNode.start(
                            VerbsTransferContractTest.verbsConfig()
                                .peerBackoff(Duration.ZERO)
                                .build())));
    nodes.add(reader);
    assertEquals(2, counter(reader, "verbsConnectionLimit"));
    readAndCheck(reader, regions.get(0), contents.get(0));
    readAndCheck(reader, regions.get(1), contents.get(1));
    assertEquals(2, counter(reader, "verbsCompletionQueues"));
    TransferConnectionException e =
        assertThrows(
            TransferConnectionException.class, () -> reader.connection(regions.get(2).node()));
    assertTrue(e.getMessage().contains("verbs connection limit reached"), e.getMessage());
    assertTrue(e.getMessage().contains(MAX_CQS + "=2"), e.getMessage());
    assertEquals(1, counter(reader, "verbsConnectionsRefused"));
    assertEquals(2, reader.stats().openConnections());

    // A place frees up: the refused peer connects, on a new queue (the emptied one was closed).
    reader.disconnect(regions.get(1).node());
    Await.until(
        () -> "the emptied completion queue stayed: " + reader.stats(),
        Duration.ofSeconds(120),
        () -> counter(reader, "verbsCompletionQueues") == 1);
    readAndCheck(reader, regions.get(2), contents.get(2));
    assertEquals(2, counter(reader, "verbsCompletionQueues"));
    assertEquals(3, counter(reader, "verbsCompletionQueuesOpened"));
  }
}
