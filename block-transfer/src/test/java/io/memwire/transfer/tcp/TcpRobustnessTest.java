package io.memwire.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.testing.Await;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tcp responder under attack: connection floods over the cap, idle and never-reading peers, bad
 * handshakes, and I/O-thread errors. Each test waits on a condition with a deadline.
 */
class TcpRobustnessTest {
  private final List<TransferNode> nodes = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @TempDir Path dir;

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
    for (TransferNode n : nodes) {
      n.close();
      assertEquals(0, n.stats().registeredRegions());
      assertEquals(0, n.stats().mappedSegments());
    }
  }

  private TransferNode node(TransferConfigBuilder b) {
    TransferNode n = TransferNode.start(b.build());
    nodes.add(n);
    return n;
  }

  static TransferConfigBuilder tcp() {
    return TransferConfig.builder().provider(ProviderKind.TCP).bindAddress("127.0.0.1");
  }

  static byte[] data(int n) {
    byte[] d = new byte[n];
    new Random(n).nextBytes(d);
    return d;
  }

  static MemoryRegion register(TransferNode n, byte[] data) {
    ByteBuffer b = ByteBuffer.allocateDirect(data.length);
    b.put(data).flip();
    return TestRegions.register(n, b);
  }

  static long counter(TransferNode n, String name) {
    Long v = n.stats().asMap().get(name);
    assertTrue(v != null, "no counter " + name + " in " + n.stats().asMap());
    return v;
  }

  /** Reads [offset, offset + length) of {@code region} with a fresh reader and compares. */
  void assertServes(
      RemoteRegion region, byte[] data, int offset, int length, TransferConfigBuilder readerConfig)
      throws Exception {
    TransferNode reader = node(readerConfig);
    TransferBuffer b =
        reader
            .connection(region.node())
            .read(ReadRequest.of(region, offset, length))
            .get(30, TimeUnit.SECONDS);
    byte[] got = new byte[length];
    b.nioBuffer().get(got);
    b.release();
    byte[] want = new byte[length];
    System.arraycopy(data, offset, want, 0, length);
    assertArrayEquals(want, got);
  }

  private Socket connect(TransferNode server) throws IOException {
    Socket s = new Socket();
    closeables.add(s);
    s.connect(server.localAddress(), 5000);
    s.setSoTimeout(20_000);
    return s;
  }

  /** A raw client that has done the unauthenticated handshake. */
  private Socket rawClient(TransferNode server) throws IOException {
    Socket s = connect(server);
    s.getOutputStream().write(Handshake.hello(false, Handshake.nonce()).array());
    DataInputStream in = new DataInputStream(s.getInputStream());
    in.readFully(new byte[Handshake.CHALLENGE_SIZE]);
    byte[] welcome = new byte[Handshake.WELCOME_SIZE];
    in.readFully(welcome);
    assertEquals(Handshake.STATUS_OK, welcome[4]);
    return s;
  }

  /** Reads until the server closes (EOF or reset); returns the bytes read before. */
  static long drainUntilClosed(Socket s) throws IOException {
    InputStream in = s.getInputStream();
    byte[] buf = new byte[1 << 16];
    long total = 0;
    try {
      int n;
      while ((n = in.read(buf)) >= 0) {
        total += n;
      }
    } catch (SocketException reset) {
      // a reset is a close too
    }
    return total;
  }

  static byte[] request(long length, long id, long key, long address) {
    ByteBuffer b = ByteBuffer.allocate(Wire.REQUEST_SIZE);
    b.put(Wire.TYPE_READ)
        .put((byte) 0)
        .putShort((short) 0)
        .putInt((int) length)
        .putLong(id)
        .putLong(key)
        .putLong(address);
    return b.array();
  }

  @Test
  void connectionsOverTheCapAreRefusedCleanlyAndTheNodeStillServes() throws Exception {
    byte[] data = data(8192);
    TransferNode server = node(tcp().maxConnections(4));
    MemoryRegion region = register(server, data);
    List<Socket> admitted = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      admitted.add(rawClient(server));
    }
    assertEquals(4, counter(server, "servingSessions"));
    for (int i = 0; i < 6; i++) {
      Socket s = connect(server);
      s.getOutputStream().write(Handshake.hello(false, Handshake.nonce()).array());
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
      in.readFully(challenge);
      ByteBuffer c = ByteBuffer.wrap(challenge);
      assertEquals(Handshake.MAGIC, c.getInt());
      c.getShort();
      assertEquals(Handshake.STATUS_BUSY, c.get(), "refusal status");
      assertEquals(0, drainUntilClosed(s), "nothing after the refusal, then a close");
    }
    TransferNode late = node(tcp());
    TransferConnectionException e =
        assertThrows(
            TransferConnectionException.class, () -> late.connection(server.localAddress()));
    assertTrue(e.getMessage().contains("maxConnections"), e.getMessage());
    assertEquals(7, counter(server, "connectionsRefused"));
    assertEquals(4, counter(server, "servingSessions"));

    admitted.get(0).close();
    admitted.get(1).close();
    Await.until(
        "two sessions end", Duration.ofSeconds(20), () -> counter(server, "servingSessions") <= 2);
    assertServes(region.remote(), data, 100, 5000, tcp());
  }

  /** Connects and sends HELLO; returns the socket and the CHALLENGE's status byte. */
  private Socket hello(TransferNode server, DataInputStream[] inOut, byte[][] nonces)
      throws IOException {
    Socket s = connect(server);
    byte[] clientNonce = Handshake.nonce();
    s.getOutputStream().write(Handshake.hello(true, clientNonce).array());
    DataInputStream in = new DataInputStream(s.getInputStream());
    inOut[0] = in;
    nonces[0] = clientNonce;
    return s;
  }

  /** One authenticated handshake; returns the WELCOME status (or the CHALLENGE's, if refused). */
  private byte authenticate(TransferNode server, byte[] secret, List<Socket> keep)
      throws IOException {
    DataInputStream[] in = new DataInputStream[1];
    byte[][] clientNonce = new byte[1][];
    Socket s = hello(server, in, clientNonce);
    keep.add(s);
    byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
    in[0].readFully(challenge);
    ByteBuffer c = ByteBuffer.wrap(challenge);
    c.getInt();
    c.getShort();
    byte status = c.get();
    if (status != Handshake.STATUS_OK) {
      return status;
    }
    c.get();
    byte[] serverNonce = new byte[Handshake.NONCE_SIZE];
    c.get(serverNonce);
    s.getOutputStream().write(Handshake.clientProof(secret, serverNonce, clientNonce[0]));
    byte[] welcome = new byte[Handshake.WELCOME_SIZE];
    in[0].readFully(welcome);
    return welcome[4];
  }

  @Test
  void peersThatNeverAuthenticateCannotTakeTheSlotsOfPeersThatDo() throws Exception {
    byte[] secret = "a shared secret".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    // 20 served connections, and 16 (the floor) at once in their handshake.
    TransferNode server = node(tcp().authSecret(secret).maxConnections(20));
    List<Socket> stuck = new ArrayList<>();
    for (int i = 0; i < 15; i++) {
      DataInputStream[] in = new DataInputStream[1];
      Socket s = hello(server, in, new byte[1][]);
      stuck.add(s);
      byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
      in[0].readFully(challenge);
      assertEquals(Handshake.STATUS_OK, challenge[6], "an unauthenticated peer may start");
      // ...and never sends its proof.
    }
    List<Socket> served = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      assertEquals(
          Handshake.STATUS_OK,
          authenticate(server, secret, served),
          "authenticated peer " + i + " is served beside 15 stuck handshakes");
    }
    assertEquals(
        Handshake.STATUS_BUSY,
        authenticate(server, secret, served),
        "the 21st is over maxConnections");
    served.get(0).close();
    // servingSessions counts every session, handshakes included: 15 stuck and 19 served once the
    // closed one and the refused 21st have both left (a session returns its serving slot first).
    Await.until(
        "a served slot frees",
        Duration.ofSeconds(20),
        () -> counter(server, "servingSessions") <= 15 + 19);
    // The handshake cap: with 15 stuck, one more unauthenticated peer fits; the next one pushes
    // out the one longest in its handshake instead of being refused.
    DataInputStream[] in = new DataInputStream[1];
    stuck.add(hello(server, in, new byte[1][]));
    byte[] sixteenth = new byte[Handshake.CHALLENGE_SIZE];
    in[0].readFully(sixteenth);
    assertEquals(Handshake.STATUS_OK, sixteenth[6], "a 16th concurrent handshake fits");
    DataInputStream[] in2 = new DataInputStream[1];
    Socket over = hello(server, in2, new byte[1][]);
    byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
    in2[0].readFully(challenge);
    assertEquals(Handshake.STATUS_OK, challenge[6], "a 17th concurrent handshake may start");
    assertEquals(0, drainUntilClosed(stuck.get(0)), "the oldest stuck handshake was closed");
    assertEquals(1, counter(server, "handshakesEvicted"));
    stuck.add(over);
    for (Socket s : stuck) {
      s.close();
    }
    assertEquals(
        Handshake.STATUS_OK,
        authenticate(server, secret, served),
        "the freed serving slot goes to the next authenticated peer");
  }

  /**
   * Peers that connect and never finish their handshake, renewed as fast as they like, cannot keep
   * a new peer from authenticating: each new connection at the handshake cap closes the oldest
   * handshake, so the newcomer's own takes a few milliseconds and is never the oldest.
   */
  @Test
  void stuckHandshakesCannotKeepANewPeerOut() throws Exception {
    byte[] secret = "a shared secret".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    TransferNode server = node(tcp().authSecret(secret).maxConnections(20)); // 16 handshakes
    List<Socket> stuck = new ArrayList<>();
    try {
      for (int i = 0; i < 64; i++) {
        Socket s = connect(server);
        if (i % 2 == 0) {
          s.getOutputStream().write(new byte[] {1, 2});
        }
        stuck.add(s);
      }
      List<Socket> served = new ArrayList<>();
      assertEquals(
          Handshake.STATUS_OK,
          authenticate(server, secret, served),
          "an authenticated peer gets in beside 64 stuck connections");
      served.forEach(
          s -> {
            try {
              s.close();
            } catch (IOException ignored) {
              // closing
            }
          });
      Await.until(
          "evictions counted",
          Duration.ofSeconds(20),
          () -> counter(server, "handshakesEvicted") >= 48);
    } finally {
      for (Socket s : stuck) {
        s.close();
      }
    }
  }

  @Test
  void idleConnectionsAreClosedAfterTheIdleTimeout() throws Exception {
    TransferNode server = node(tcp().idleTimeout(Duration.ofSeconds(1)));
    byte[] data = data(4096);
    MemoryRegion region = register(server, data);
    RegionDescriptor d = region.descriptors().get(0);
    Socket s = rawClient(server);
    // Activity keeps it open: a read answered now restarts the idle clock.
    s.getOutputStream().write(request(16, 1, d.key(), d.address()));
    DataInputStream in = new DataInputStream(s.getInputStream());
    in.readFully(new byte[Wire.RESPONSE_HEADER_SIZE + 16]);
    long start = System.nanoTime();
    assertEquals(0, drainUntilClosed(s));
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(ms >= 900, "closed after " + ms + " ms, before the idle timeout");
    Await.until(
        "idle close counted", Duration.ofSeconds(10), () -> counter(server, "idleClosed") == 1);
    Await.until(
        "session gone", Duration.ofSeconds(10), () -> counter(server, "servingSessions") == 0);
    // A reader whose cached connection was closed while idle reconnects on its next read.
    TransferNode reader = node(tcp());
    io.memwire.transfer.Connection first = reader.connection(server.localAddress());
    first.read(ReadRequest.of(region.remote(), 0, 10)).get(30, TimeUnit.SECONDS).release();
    Await.until(
        "reader's connection closed as idle",
        Duration.ofSeconds(20),
        () -> counter(server, "idleClosed") == 2);
    Await.until("reader notices the close", Duration.ofSeconds(20), () -> !first.isOpen());
    TransferBuffer b =
        reader
            .connection(server.localAddress())
            .read(ReadRequest.of(region.remote(), 0, 4096))
            .get(30, TimeUnit.SECONDS);
    byte[] got = new byte[4096];
    b.nioBuffer().get(got);
    b.release();
    assertArrayEquals(data, got);
  }

  @Test
  void aPeerThatNeverReadsIsCutOffAndTheClosedRegionIsUnmapped() throws Exception {
    TransferNode server = node(tcp().writeTimeout(Duration.ofSeconds(1)));
    int size = 8 << 20;
    byte[] data = data(size);
    Path file = dir.resolve("region.bin");
    Files.write(file, data);
    MemoryRegion region = server.register(file, 0, size, server.memory());
    assertEquals(1, server.stats().mappedSegments());
    RegionDescriptor d = region.descriptors().get(0);

    Socket s = new Socket();
    closeables.add(s);
    s.setReceiveBufferSize(4096);
    s.connect(server.localAddress(), 5000);
    s.setSoTimeout(20_000);
    OutputStream os = s.getOutputStream();
    os.write(Handshake.hello(false, Handshake.nonce()).array());
    DataInputStream in = new DataInputStream(s.getInputStream());
    in.readFully(new byte[Handshake.CHALLENGE_SIZE + Handshake.WELCOME_SIZE]);
    int reads = 256;
    ByteBuffer pipelined = ByteBuffer.allocate(reads * Wire.REQUEST_SIZE);
    for (int i = 0; i < reads; i++) {
      pipelined.put(request(1 << 20, i + 1, d.key(), d.address() + (i % 8) * (1L << 20)));
    }
    os.write(pipelined.array());
    os.flush();
    Await.until(
        "all reads queued", Duration.ofSeconds(20), () -> counter(server, "servedReads") == reads);

    region.close(); // queued responses still pin the mapping
    region.released().get(30, TimeUnit.SECONDS);
    assertEquals(0, server.stats().mappedSegments());
    assertEquals(1, counter(server, "writeTimeouts"));
    long got = drainUntilClosed(s);
    assertTrue(got < (long) reads << 20, "the server stopped sending: " + got + " bytes");
    Await.until(
        "session gone", Duration.ofSeconds(10), () -> counter(server, "servingSessions") == 0);

    MemoryRegion fresh = register(server, data(4096));
    assertServes(fresh.remote(), data(4096), 0, 4096, tcp());
  }

  @Test
  void aSlowButReadingPeerIsNotCutOff() throws Exception {
    TransferNode server = node(tcp().writeTimeout(Duration.ofMillis(500)));
    int size = 4 << 20;
    byte[] data = data(size);
    MemoryRegion region = register(server, data);
    // Many large reads through a reader that drains as it goes: progress, so no timeout.
    TransferNode reader = node(tcp().maxTransferSize(1 << 20));
    for (int i = 0; i < 8; i++) {
      TransferBuffer b =
          reader
              .connection(server.localAddress())
              .read(ReadRequest.of(region.remote(), 0, size))
              .get(30, TimeUnit.SECONDS);
      byte[] got = new byte[size];
      b.nioBuffer().get(got);
      b.release();
      assertArrayEquals(data, got);
    }
    assertEquals(0, counter(server, "writeTimeouts"));
  }

  @Test
  void wrongMagicWrongVersionAndTruncatedHandshakesAreClosed() throws Exception {
    byte[] data = data(4096);
    TransferNode server = node(tcp().connectTimeout(Duration.ofMillis(500)));
    MemoryRegion region = register(server, data);

    Socket badMagic = connect(server);
    ByteBuffer hello = Handshake.hello(false, Handshake.nonce());
    hello.putInt(0, 0x12345678);
    badMagic.getOutputStream().write(hello.array());
    assertEquals(0, drainUntilClosed(badMagic), "no answer to a wrong magic");

    Socket badVersion = connect(server);
    hello = Handshake.hello(false, Handshake.nonce());
    hello.putShort(4, (short) 99);
    badVersion.getOutputStream().write(hello.array());
    DataInputStream in = new DataInputStream(badVersion.getInputStream());
    byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
    in.readFully(challenge);
    assertEquals(Handshake.STATUS_BAD_VERSION, challenge[6]);
    assertEquals(0, drainUntilClosed(badVersion));

    Socket truncated = connect(server);
    truncated.getOutputStream().write(Handshake.hello(false, Handshake.nonce()).array(), 0, 10);
    long start = System.nanoTime();
    assertEquals(0, drainUntilClosed(truncated), "half a HELLO gets no answer");
    assertTrue((System.nanoTime() - start) / 1_000_000 >= 300, "closed by the handshake deadline");

    assertEquals(1, counter(server, "protocolViolations"));
    assertServes(region.remote(), data, 0, 4096, tcp());
  }

  @Test
  void newSettingsAreValidatedNamingTheKey() {
    TransferConfigException e =
        assertThrows(
            TransferConfigException.class,
            () -> TransferConfig.fromProperties(Map.of("m.maxConnections", "0"), "m."));
    assertTrue(e.getMessage().contains("m.maxConnections"), e.getMessage());
    e =
        assertThrows(
            TransferConfigException.class,
            () -> TransferConfig.fromProperties(Map.of("m.maxConnections", "4294967297"), "m."));
    assertTrue(e.getMessage().contains("m.maxConnections"), e.getMessage());
    e =
        assertThrows(
            TransferConfigException.class,
            () -> TransferConfig.fromProperties(Map.of("m.idleTimeout", "10ms"), "m."));
    assertTrue(e.getMessage().contains("m.idleTimeout"), e.getMessage());
    e =
        assertThrows(
            TransferConfigException.class,
            () -> TransferConfig.fromProperties(Map.of("m.writeTimeout", "2h"), "m."));
    assertTrue(e.getMessage().contains("m.writeTimeout"), e.getMessage());
    TransferConfig c =
        TransferConfig.fromProperties(
            Map.of("m.maxConnections", "10", "m.idleTimeout", "5s", "m.writeTimeout", "250ms"),
            "m.");
    assertEquals(10, c.maxConnections());
    assertEquals(Duration.ofSeconds(5), c.idleTimeout());
    assertEquals(Duration.ofMillis(250), c.writeTimeout());
  }

  @Test
  void anErrorInAHandlerClosesThatChannelOnlyAndTheThreadGoesOn() throws Exception {
    LongAdder errors = new LongAdder();
    EventLoop loop = new EventLoop("memwire-test-loop", errors);
    loop.start();
    Pipe bad = Pipe.open();
    Pipe good = Pipe.open();
    closeables.add(bad.sink());
    closeables.add(good.sink());
    closeables.add(loop::shutdown);
    CompletableFuture<Exception> badClosed = new CompletableFuture<>();
    CountDownLatch goodRead = new CountDownLatch(1);
    AtomicReference<Exception> goodClosed = new AtomicReference<>();
    loop.execute(
        () -> {
          try {
            bad.source().configureBlocking(false);
            good.source().configureBlocking(false);
            loop.register(
                bad.source(),
                SelectionKey.OP_READ,
                new EventLoop.Handler() {
                  @Override
                  public void ready(SelectionKey key) {
                    throw new OutOfMemoryError(
                        "Cannot reserve 16384 bytes of direct buffer memory");
                  }

                  @Override
                  public void closeOnLoop(Exception cause) {
                    try {
                      bad.source().close();
                    } catch (IOException ignored) {
                      // test
                    }
                    badClosed.complete(cause);
                  }
                });
            loop.register(
                good.source(),
                SelectionKey.OP_READ,
                new EventLoop.Handler() {
                  @Override
                  public void ready(SelectionKey key) throws IOException {
                    if (good.source().read(ByteBuffer.allocate(8)) > 0) {
                      goodRead.countDown();
                    }
                  }

                  @Override
                  public void closeOnLoop(Exception cause) {
                    goodClosed.set(cause);
                  }
                });
          } catch (IOException e) {
            throw new RuntimeException(e);
          }
        });
    bad.sink().write(ByteBuffer.wrap(new byte[] {1}));
    Exception cause = badClosed.get(20, TimeUnit.SECONDS);
    assertTrue(cause.getCause() instanceof OutOfMemoryError, String.valueOf(cause));
    good.sink().write(ByteBuffer.wrap(new byte[] {2}));
    assertTrue(goodRead.await(20, TimeUnit.SECONDS), "the other channel is still served");
    assertTrue(loop.isAlive());
    assertEquals(1, errors.sum());
    assertEquals(null, goodClosed.get());
    loop.shutdown();
    assertFalse(loop.isAlive());
  }
}
