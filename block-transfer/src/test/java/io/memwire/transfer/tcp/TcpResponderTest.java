package io.memwire.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.TransferTimeoutException;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
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
 * What only the tcp provider has: its responder facing raw sockets (garbage, truncated and
 * oversized frames), the shared-secret handshake, and peers that hang or die.
 */
class TcpResponderTest {
  private final List<TransferNode> nodes = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  private TransferNode node(TransferConfigBuilder b) {
    TransferNode n = TransferNode.start(b.build());
    nodes.add(n);
    return n;
  }

  private static TransferConfigBuilder tcp() {
    return TransferConfig.builder().provider(ProviderKind.TCP).bindAddress("127.0.0.1");
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
    for (TransferNode n : nodes) {
      n.close();
      assertEquals(0, n.stats().registeredRegions());
      assertEquals(0, n.stats().poolBuffersOutstanding());
    }
  }

  /** A raw client that has done the (unauthenticated) handshake. */
  private Socket rawClient(TransferNode server) throws IOException {
    Socket s = new Socket();
    closeables.add(s);
    s.connect(server.localAddress(), 5000);
    s.setSoTimeout(10_000);
    OutputStream os = s.getOutputStream();
    os.write(Handshake.hello(false, Handshake.nonce()).array());
    DataInputStream in = new DataInputStream(s.getInputStream());
    byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
    in.readFully(challenge);
    byte[] welcome = new byte[Handshake.WELCOME_SIZE];
    in.readFully(welcome);
    assertEquals(Handshake.STATUS_OK, welcome[4]);
    return s;
  }

  private static byte[] request(byte type, long length, long id, long key, long address) {
    ByteBuffer b = ByteBuffer.allocate(Wire.REQUEST_SIZE);
    b.put(type)
        .put((byte) 0)
        .putShort((short) 0)
        .putInt((int) length)
        .putLong(id)
        .putLong(key)
        .putLong(address);
    return b.array();
  }

  /** The server closed the connection: reading ends (EOF or reset) within the timeout. */
  private static void assertClosedByServer(Socket s) throws IOException {
    InputStream in = s.getInputStream();
    try {
      while (in.read() >= 0) {
        // drain whatever was sent before the close
      }
    } catch (java.net.SocketException reset) {
      // a reset is a close too
    }
  }

  private void assertStillServes(TransferNode server, MemoryRegion region, byte[] data)
      throws Exception {
    assertStillServes(server, region, data, tcp());
  }

  private void assertStillServes(
      TransferNode server, MemoryRegion region, byte[] data, TransferConfigBuilder readerConfig)
      throws Exception {
    TransferNode reader = node(readerConfig);
    TransferBuffer b =
        reader
            .connection(server.localAddress())
            .read(ReadRequest.of(region.remote(), 0, 1000))
            .get(30, TimeUnit.SECONDS);
    byte[] got = new byte[1000];
    b.nioBuffer().get(got);
    b.release();
    byte[] want = new byte[1000];
    System.arraycopy(data, 0, want, 0, 1000);
    assertArrayEquals(want, got);
  }

  private static byte[] data(int n) {
    byte[] d = new byte[n];
    new Random(n).nextBytes(d);
    return d;
  }

  private static MemoryRegion register(TransferNode n, byte[] data) {
    ByteBuffer b = ByteBuffer.allocateDirect(data.length);
    b.put(data).flip();
    return TestRegions.register(n, b);
  }

  @Test
  void rawRequestsGetDataOrTypedErrors() throws Exception {
    byte[] data = data(8192);
    TransferNode server = node(tcp());
    MemoryRegion region = register(server, data);
    RegionDescriptor d = region.descriptors().get(0);
    Socket s = rawClient(server);
    OutputStream os = s.getOutputStream();
    DataInputStream in = new DataInputStream(s.getInputStream());
    os.write(request(Wire.TYPE_READ, 16, 1, d.key(), d.address() + 8));
    os.write(request(Wire.TYPE_READ, 0, 2, d.key(), d.address()));
    os.write(request(Wire.TYPE_READ, 16, 3, d.key() + 1, d.address()));
    os.write(request(Wire.TYPE_READ, 16, 4, d.key(), d.address() + 8190));
    os.flush();
    // 1: data
    assertEquals(Wire.TYPE_DATA, in.readByte());
    in.readByte();
    in.readShort();
    assertEquals(16, in.readInt());
    assertEquals(1, in.readLong());
    byte[] got = new byte[16];
    in.readFully(got);
    byte[] want = new byte[16];
    System.arraycopy(data, 8, want, 0, 16);
    assertArrayEquals(want, got);
    // 2, 3, 4: errors with their status
    byte[] statuses = {
      Wire.STATUS_INVALID_REQUEST, Wire.STATUS_UNKNOWN_KEY, Wire.STATUS_OUT_OF_BOUNDS
    };
    for (int i = 0; i < 3; i++) {
      assertEquals(Wire.TYPE_ERROR, in.readByte());
      assertEquals(statuses[i], in.readByte());
      in.readShort();
      int len = in.readInt();
      assertEquals(2 + i, in.readLong());
      assertTrue(len > 0 && len <= Wire.MAX_ERROR_LENGTH);
      in.readFully(new byte[len]);
    }
    assertEquals(3, server.stats().asMap().get("servedErrors"));
  }

  @Test
  void garbageTruncatedAndOversizedFramesCloseOnlyThatConnection() throws Exception {
    byte[] data = data(4096);
    TransferNode server = node(tcp());
    MemoryRegion region = register(server, data);
    RegionDescriptor d = region.descriptors().get(0);

    // Garbage instead of a handshake.
    Socket garbage = new Socket();
    closeables.add(garbage);
    garbage.connect(server.localAddress(), 5000);
    garbage.setSoTimeout(10_000);
    byte[] junk = new byte[100];
    new Random(1).nextBytes(junk);
    garbage.getOutputStream().write(junk);
    assertClosedByServer(garbage);

    // Unknown request type after a good handshake.
    Socket badType = rawClient(server);
    badType.getOutputStream().write(request((byte) 77, 16, 1, d.key(), d.address()));
    assertClosedByServer(badType);

    // A read longer than the frame limit.
    Socket oversized = rawClient(server);
    oversized
        .getOutputStream()
        .write(request(Wire.TYPE_READ, 0xFFFFFFF0L, 1, d.key(), d.address()));
    assertClosedByServer(oversized);

    // Half a request, then the client vanishes.
    Socket truncated = rawClient(server);
    truncated.getOutputStream().write(request(Wire.TYPE_READ, 16, 1, d.key(), d.address()), 0, 13);
    truncated.close();

    assertTrue(server.stats().asMap().get("protocolViolations") >= 3);
    assertStillServes(server, region, data);
  }

  @Test
  void sharedSecretAdmitsOnlyPeersThatKnowIt() throws Exception {
    byte[] data = data(4096);
    TransferNode server = node(tcp().authSecret("s3cret"));
    MemoryRegion region = register(server, data);

    TransferNode good = node(tcp().authSecret("s3cret"));
    TransferBuffer b =
        good.connection(server.localAddress())
            .read(ReadRequest.of(region.remote(), 0, 4096))
            .get(30, TimeUnit.SECONDS);
    b.release();

    TransferNode none = node(tcp());
    TransferConnectionException noSecret =
        assertThrows(
            TransferConnectionException.class, () -> none.connection(server.localAddress()));
    assertTrue(noSecret.getMessage().contains("requires authentication"), noSecret.getMessage());

    TransferNode wrong = node(tcp().authSecret("guess"));
    TransferConnectionException wrongSecret =
        assertThrows(
            TransferConnectionException.class, () -> wrong.connection(server.localAddress()));
    assertTrue(
        wrongSecret.getMessage().contains("authentication failed"), wrongSecret.getMessage());

    // A server without a secret is refused by a client that has one.
    TransferNode open = node(tcp());
    assertThrows(TransferConnectionException.class, () -> good.connection(open.localAddress()));

    // A raw client that answers the challenge with a made-up proof is refused.
    Socket raw = new Socket();
    closeables.add(raw);
    raw.connect(server.localAddress(), 5000);
    raw.setSoTimeout(10_000);
    raw.getOutputStream().write(Handshake.hello(true, Handshake.nonce()).array());
    DataInputStream in = new DataInputStream(raw.getInputStream());
    in.readFully(new byte[Handshake.CHALLENGE_SIZE]);
    raw.getOutputStream().write(new byte[Handshake.AUTH_SIZE]);
    byte[] welcome = new byte[Handshake.WELCOME_SIZE];
    in.readFully(welcome);
    assertEquals(Handshake.STATUS_AUTH_FAILED, welcome[4]);
    assertClosedByServer(raw);
    assertEquals(1, server.stats().asMap().get("authFailures"), "the raw client's bad proof");

    assertStillServes(server, region, data, tcp().authSecret("s3cret"));
  }

  @Test
  void aPeerThatStopsAnsweringTimesOutAndFailsTheConnection() throws Exception {
    try (ServerSocket silent = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
      CompletableFuture<Void> accepted =
          CompletableFuture.runAsync(
              () -> {
                try {
                  Socket s = silent.accept();
                  closeables.add(s);
                  DataInputStream in = new DataInputStream(s.getInputStream());
                  in.readFully(new byte[Handshake.HELLO_SIZE]);
                  OutputStream os = s.getOutputStream();
                  os.write(
                      Handshake.challenge(Handshake.STATUS_OK, false, Handshake.nonce(), null)
                          .array());
                  os.write(Handshake.welcome(Handshake.STATUS_OK).array());
                  // then never answer a request
                } catch (IOException e) {
                  throw new RuntimeException(e);
                }
              });
      TransferNode client = node(tcp().readTimeout(Duration.ofMillis(500)));
      InetSocketAddress peer =
          new InetSocketAddress(silent.getInetAddress(), silent.getLocalPort());
      RegionDescriptor d = new RegionDescriptor(ProviderKind.TCP, peer, 42, 4096, 1 << 20);
      long start = System.nanoTime();
      CompletableFuture<TransferBuffer> f =
          client.connection(peer).read(ReadRequest.of(d, 0, 1000));
      ExecutionException e =
          assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
      long ms = (System.nanoTime() - start) / 1_000_000;
      assertInstanceOf(TransferTimeoutException.class, e.getCause());
      assertTrue(ms >= 400, "timed out after " + ms + " ms, before its deadline");
      assertTrue(e.getCause().getMessage().contains(String.valueOf(peer.getPort())));
      assertEquals(1, client.stats().timeouts());
      assertEquals(0, client.stats().poolBuffersOutstanding());
      accepted.get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void aPeerKilledMidResponseFailsReadsWithAConnectionError() throws Exception {
    try (ServerSocket dying = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
      CompletableFuture<Void> serverSide =
          CompletableFuture.runAsync(
              () -> {
                try {
                  Socket s = dying.accept();
                  DataInputStream in = new DataInputStream(s.getInputStream());
                  in.readFully(new byte[Handshake.HELLO_SIZE]);
                  OutputStream os = s.getOutputStream();
                  os.write(
                      Handshake.challenge(Handshake.STATUS_OK, false, Handshake.nonce(), null)
                          .array());
                  os.write(Handshake.welcome(Handshake.STATUS_OK).array());
                  byte[] req = new byte[Wire.REQUEST_SIZE];
                  in.readFully(req);
                  long id = ByteBuffer.wrap(req).getLong(8);
                  // Half a response, then a reset, as if the process died.
                  ByteBuffer h = ByteBuffer.allocate(Wire.RESPONSE_HEADER_SIZE);
                  h.put(Wire.TYPE_DATA).put((byte) 0).putShort((short) 0).putInt(1000).putLong(id);
                  os.write(h.array());
                  os.write(new byte[300]);
                  os.flush();
                  s.setSoLinger(true, 0);
                  s.close();
                } catch (EOFException e) {
                  // the client gave up first: also fine for this test's assertions
                } catch (IOException e) {
                  throw new RuntimeException(e);
                }
              });
      TransferNode client = node(tcp());
      InetSocketAddress peer = new InetSocketAddress(dying.getInetAddress(), dying.getLocalPort());
      RegionDescriptor d = new RegionDescriptor(ProviderKind.TCP, peer, 42, 4096, 1 << 20);
      List<CompletableFuture<TransferBuffer>> fs =
          client
              .connection(peer)
              .read(List.of(ReadRequest.of(d, 0, 1000), ReadRequest.of(d, 5000, 1000)))
              .results();
      for (CompletableFuture<TransferBuffer> f : fs) {
        ExecutionException e =
            assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
        assertInstanceOf(TransferConnectionException.class, e.getCause());
      }
      serverSide.get(10, TimeUnit.SECONDS);
      assertEquals(0, client.stats().poolBuffersOutstanding());
      assertEquals(0, client.stats().outstandingRequests());
    }
  }

  @Test
  void remoteAccessErrorsNameTheirReason() throws Exception {
    TransferNode server = node(tcp());
    TransferNode client = node(tcp());
    MemoryRegion region = register(server, data(4096));
    RegionDescriptor d = region.descriptors().get(0);
    region.close();
    CompletableFuture<TransferBuffer> f =
        client.connection(server.localAddress()).read(ReadRequest.of(d, 0, 10));
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
    RemoteAccessException rae = assertInstanceOf(RemoteAccessException.class, e.getCause());
    assertEquals(RemoteAccessException.Reason.REGION_CLOSED, rae.reason());
    RegionDescriptor unknown = new RegionDescriptor(ProviderKind.TCP, d.node(), 12345, 0, 100);
    ExecutionException e2 =
        assertThrows(
            ExecutionException.class,
            () ->
                client
                    .connection(server.localAddress())
                    .read(ReadRequest.of(unknown, 0, 10))
                    .get(30, TimeUnit.SECONDS));
    assertEquals(
        RemoteAccessException.Reason.UNKNOWN_KEY, ((RemoteAccessException) e2.getCause()).reason());
  }

  @Test
  void keysAreUnpredictable() {
    TransferNode server = node(tcp());
    List<Long> keys = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      MemoryRegion r = TestRegions.register(server, ByteBuffer.allocateDirect(64));
      keys.add(r.descriptors().get(0).key());
    }
    long sequential = 0;
    for (int i = 1; i < keys.size(); i++) {
      long delta = keys.get(i) - keys.get(i - 1);
      if (Math.abs(delta) < 1_000_000) {
        sequential++;
      }
    }
    assertEquals(0, sequential, "keys look sequential: " + keys);
    assertEquals(keys.size(), keys.stream().distinct().count());
  }

  @Test
  void unreachableAddressReportsTheError() {
    TransferNode client = node(tcp().connectTimeout(Duration.ofMillis(500)));
    TransferException e =
        assertThrows(
            TransferException.class,
            () -> client.connection(new InetSocketAddress("127.0.0.1", 1)));
    assertTrue(e.getMessage().contains("127.0.0.1:1"), e.getMessage());
  }
}
