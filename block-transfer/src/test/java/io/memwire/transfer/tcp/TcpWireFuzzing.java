package io.memwire.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferNode;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;

/**
 * Property-based fuzzing of the tcp wire as the responder decodes it: a model predicts, for any
 * byte stream, what a correct responder answers (a HELLO's fate, then per 32-byte request data, a
 * typed error or a close) and the test checks the server's answer byte for byte. So a mutated frame
 * never crashes the responder, never yields a byte outside a live region (every DATA body is
 * compared with the region's bytes at the requested offset), and always ends in a typed error or a
 * closed connection; after each try the node still serves. Shared by the short fixed-seed run in
 * the default suite ({@link TcpWireFuzzTest}) and the long one behind {@code -Pfuzz} ({@link
 * TcpWireFuzzSoak}).
 */
abstract class TcpWireFuzzing {
  static final int REGION_SIZE = 4096;
  private static final Object LOCK = new Object();
  private static TransferNode server;
  private static TransferNode authServer;
  private static MemoryRegion live;
  private static MemoryRegion authLive;
  private static long closedKey;
  private static TransferNode client;
  private static byte[] data;
  static final byte[] SECRET = "fuzz-secret".getBytes(java.nio.charset.StandardCharsets.UTF_8);

  /** Starts the shared servers once per JVM; they are daemon threads closed by {@link #stop}. */
  static void start() {
    synchronized (LOCK) {
      if (server != null) {
        return;
      }
      data = TcpRobustnessTest.data(REGION_SIZE);
      TransferConfigBuilder b = TcpRobustnessTest.tcp().connectTimeout(Duration.ofSeconds(5));
      server = TransferNode.start(b.build());
      authServer = TransferNode.start(b.authSecret(SECRET).build());
      live = TcpRobustnessTest.register(server, data);
      authLive = TcpRobustnessTest.register(authServer, data);
      MemoryRegion closed = TcpRobustnessTest.register(server, data);
      closedKey = closed.descriptors().get(0).key();
      closed.close();
      // Every try is a new fake peer, and the OS may hand a later one a port an earlier one
      // used: no back-off, or a refused handshake would make that later try skip its peer.
      client =
          TransferNode.start(
              TcpRobustnessTest.tcp()
                  .readTimeout(Duration.ofSeconds(20))
                  .connectTimeout(Duration.ofSeconds(10))
                  .peerBackoff(Duration.ZERO)
                  .build());
    }
  }

  /** After each run's properties: the node still serves a reader, then the servers stop. */
  @AfterContainer
  static void nodeStillServesAReader() throws Exception {
    try {
      assertServesAReader();
    } finally {
      stop();
    }
  }

  static void stop() {
    synchronized (LOCK) {
      if (server == null) {
        return;
      }
      live.close();
      authLive.close();
      server.close();
      authServer.close();
      client.close();
      assertEquals(0, client.stats().poolBuffersOutstanding());
      assertEquals(0, server.stats().registeredRegions());
      assertEquals(0, authServer.stats().registeredRegions());
      server = null;
    }
  }

  // ---------------------------------------------------------------- generators

  /** One request frame in symbolic form, resolved against the live region at run time. */
  static final class Frame {
    final byte type;
    final long length;
    final long id;
    final int keyChoice; // 0 live, 1 closed, 2 random
    final long randomKey;
    final int addressChoice; // 0 region start + delta, 1 raw value
    final long address;

    Frame(
        byte type,
        long length,
        long id,
        int keyChoice,
        long randomKey,
        int addressChoice,
        long address) {
      this.type = type;
      this.length = length;
      this.id = id;
      this.keyChoice = keyChoice;
      this.randomKey = randomKey;
      this.addressChoice = addressChoice;
      this.address = address;
    }

    byte[] encode(RegionDescriptor d, long closedKey) {
      long key = keyChoice == 0 ? d.key() : keyChoice == 1 ? closedKey : randomKey;
      long addr = addressChoice == 0 ? d.address() + address : address;
      ByteBuffer b = ByteBuffer.allocate(Wire.REQUEST_SIZE);
      b.put(type)
          .put((byte) 0)
          .putShort((short) 0)
          .putInt((int) length)
          .putLong(id)
          .putLong(key)
          .putLong(addr);
      return b.array();
    }

    @Override
    public String toString() {
      return "Frame{type="
          + type
          + ", length="
          + length
          + ", id="
          + id
          + ", key#"
          + keyChoice
          + ", addr#"
          + addressChoice
          + " "
          + address
          + "}";
    }
  }

  static Arbitrary<Frame> frames() {
    Arbitrary<Byte> type =
        Arbitraries.frequencyOf(
            Tuple.of(12, Arbitraries.just(Wire.TYPE_READ)), Tuple.of(1, Arbitraries.bytes()));
    Arbitrary<Long> length =
        Arbitraries.frequencyOf(
            Tuple.of(6, Arbitraries.longs().between(1, REGION_SIZE)),
            Tuple.of(2, Arbitraries.longs().between(REGION_SIZE - 8, REGION_SIZE + 8)),
            Tuple.of(
                1,
                Arbitraries.of(
                    0L,
                    (long) Wire.MAX_READ_LENGTH,
                    Wire.MAX_READ_LENGTH + 1L,
                    0xFFFFFFFFL,
                    0x80000000L)),
            Tuple.of(1, Arbitraries.longs().between(0, 0xFFFFFFFFL)));
    Arbitrary<Long> address =
        Arbitraries.frequencyOf(
            Tuple.of(6, Arbitraries.longs().between(-16, REGION_SIZE + 16)),
            Tuple.of(
                1,
                Arbitraries.of(
                    Long.MIN_VALUE,
                    Long.MAX_VALUE,
                    -1L,
                    1L << 63 | 8,
                    (long) Integer.MAX_VALUE,
                    1L << 32)),
            Tuple.of(1, Arbitraries.longs()));
    return Combinators.combine(
            type,
            length,
            Arbitraries.longs(),
            Arbitraries.frequency(Tuple.of(7, 0), Tuple.of(2, 1), Tuple.of(2, 2)),
            Arbitraries.longs(),
            Arbitraries.frequency(Tuple.of(9, 0), Tuple.of(1, 1)),
            address)
        .as(Frame::new);
  }

  // ---------------------------------------------------------------- providers of both runs

  /** A handshake left alone five times in six, else flipped. */
  @Provide
  Arbitrary<List<long[]>> rareFlips() {
    return Arbitraries.frequencyOf(
        Tuple.of(5, Arbitraries.just(List.of())), Tuple.of(1, mutations()));
  }

  /** A bad magic one stream in sixteen. */
  @Provide
  Arbitrary<Boolean> magic() {
    return Arbitraries.frequency(Tuple.of(1, true), Tuple.of(15, false));
  }

  /** The wire version 1 fifteen streams in sixteen, else any. */
  @Provide
  Arbitrary<Short> version() {
    return Arbitraries.frequencyOf(
        Tuple.of(15, Arbitraries.just((short) 1)), Tuple.of(1, Arbitraries.shorts()));
  }

  @Provide
  Arbitrary<List<Frame>> frameLists() {
    return frames().list().ofMaxSize(24);
  }

  @Provide
  Arbitrary<List<long[]>> flips() {
    return mutations();
  }

  @Provide
  Arbitrary<Long> splits() {
    return Arbitraries.longs().between(0, Long.MAX_VALUE);
  }

  /** A byte flip of the encoded stream: (position as a fraction, xor mask). */
  static Arbitrary<List<long[]>> mutations() {
    return Combinators.combine(
            Arbitraries.longs().between(0, Long.MAX_VALUE), Arbitraries.integers().between(1, 255))
        .as((pos, mask) -> new long[] {pos, mask})
        .list()
        .ofMaxSize(3);
  }

  // ---------------------------------------------------------------- the model

  /** What the responder must send for one request, or null for "close the connection". */
  private static ByteBuffer expected(ByteBuffer frame, RegionDescriptor d, long closedKey) {
    byte type = frame.get();
    frame.get();
    frame.getShort();
    long length = Integer.toUnsignedLong(frame.getInt());
    long id = frame.getLong();
    long key = frame.getLong();
    long address = frame.getLong();
    if (type != Wire.TYPE_READ || length > Wire.MAX_READ_LENGTH) {
      return null;
    }
    byte status;
    if (length == 0) {
      status = Wire.STATUS_INVALID_REQUEST;
    } else if (key == d.key()) {
      // Unbounded integer arithmetic: the read must lie inside [address, address + length).
      java.math.BigInteger start =
          java.math.BigInteger.valueOf(address).subtract(java.math.BigInteger.valueOf(d.address()));
      boolean inside =
          start.signum() >= 0
              && start
                      .add(java.math.BigInteger.valueOf(length))
                      .compareTo(java.math.BigInteger.valueOf(d.length()))
                  <= 0;
      if (inside) {
        ByteBuffer r = ByteBuffer.allocate(Wire.RESPONSE_HEADER_SIZE + (int) length);
        r.put(Wire.TYPE_DATA)
            .put(Wire.STATUS_OK)
            .putShort((short) 0)
            .putInt((int) length)
            .putLong(id)
            .put(data, start.intValueExact(), (int) length);
        return r.flip();
      }
      status = Wire.STATUS_OUT_OF_BOUNDS;
    } else if (key == closedKey) {
      status = Wire.STATUS_REGION_CLOSED;
    } else {
      status = Wire.STATUS_UNKNOWN_KEY;
    }
    ByteBuffer r = ByteBuffer.allocate(Wire.RESPONSE_HEADER_SIZE);
    r.put(Wire.TYPE_ERROR).put(status).putShort((short) 0).putInt(-1).putLong(id);
    return r.flip(); // length -1: any message of 1..MAX_ERROR_LENGTH bytes
  }

  private static Socket open(TransferNode n) throws IOException {
    Socket s = new Socket();
    s.connect(n.localAddress(), 10_000);
    s.setSoTimeout(20_000);
    return s;
  }

  /** Reads one response and checks it against the model's. */
  private static void expectResponse(DataInputStream in, ByteBuffer want) throws IOException {
    byte type = in.readByte();
    byte status = in.readByte();
    in.readShort();
    int length = in.readInt();
    long id = in.readLong();
    assertEquals(want.get(0), type, "response type");
    assertEquals(want.get(1), status, "response status");
    assertEquals(want.getLong(8), id, "response id");
    if (type == Wire.TYPE_DATA) {
      assertEquals(want.getInt(4), length, "data length");
      byte[] body = new byte[length];
      in.readFully(body);
      byte[] wantBody = new byte[length];
      want.get(Wire.RESPONSE_HEADER_SIZE, wantBody);
      assertArrayEquals(wantBody, body, "data bytes");
    } else {
      assertTrue(length > 0 && length <= Wire.MAX_ERROR_LENGTH, "error length " + length);
      in.readFully(new byte[length]);
    }
  }

  private static void expectClosed(Socket s) throws IOException {
    InputStream in = s.getInputStream();
    try {
      int b = in.read();
      assertEquals(-1, b, "bytes after the point the server must close");
    } catch (SocketException reset) {
      // a reset is a close too
    }
  }

  // ---------------------------------------------------------------- the properties

  /**
   * A (possibly mutated) HELLO, then (possibly mutated) request frames sent in two pieces split
   * anywhere: the server's answers equal the model's, and the node still serves afterwards.
   */
  static void checkStream(
      boolean badMagic,
      short version,
      short flags,
      List<Frame> frames,
      List<long[]> mutations,
      long split)
      throws Exception {
    start();
    RegionDescriptor d = live.descriptors().get(0);
    ByteBuffer hello = Handshake.hello(false, Handshake.nonce());
    hello.putShort(4, version).putShort(6, flags);
    if (badMagic) {
      hello.putInt(0, Handshake.MAGIC ^ 0x00010000);
    }
    ByteBuffer stream = ByteBuffer.allocate(frames.size() * Wire.REQUEST_SIZE);
    for (Frame f : frames) {
      stream.put(f.encode(d, closedKey));
    }
    byte[] requests = stream.array();
    for (long[] m : mutations) {
      if (requests.length > 0) {
        int pos = (int) (m[0] % requests.length);
        requests[pos] ^= (byte) m[1];
      }
    }
    try (Socket s = open(server)) {
      OutputStream os = s.getOutputStream();
      DataInputStream in = new DataInputStream(s.getInputStream());
      os.write(hello.array());
      if (badMagic) {
        expectClosed(s);
        return;
      }
      byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
      in.readFully(challenge);
      assertEquals(Handshake.MAGIC, ByteBuffer.wrap(challenge).getInt());
      if (version != Handshake.VERSION) {
        assertEquals(Handshake.STATUS_BAD_VERSION, challenge[6]);
        expectClosed(s);
        return;
      }
      assertEquals(Handshake.STATUS_OK, challenge[6]);
      byte[] welcome = new byte[Handshake.WELCOME_SIZE];
      in.readFully(welcome);
      assertEquals(Handshake.STATUS_OK, welcome[4]);
      int cut = requests.length == 0 ? 0 : (int) (split % (requests.length + 1));
      os.write(requests, 0, cut);
      os.flush();
      os.write(requests, cut, requests.length - cut);
      os.flush();
      ByteBuffer all = ByteBuffer.wrap(requests);
      List<ByteBuffer> answers = new java.util.ArrayList<>();
      boolean closes = false;
      while (all.remaining() >= Wire.REQUEST_SIZE) {
        ByteBuffer want = expected(all, d, closedKey);
        if (want == null) {
          closes = true;
          break;
        }
        answers.add(want);
      }
      if (closes) {
        // A protocol violation fails the connection at once, like a queue pair going to error:
        // answers to the requests before it may be cut anywhere, but each one sent is right.
        try {
          for (ByteBuffer want : answers) {
            expectResponse(in, want);
          }
          expectClosed(s);
        } catch (EOFException | SocketException closedEarly) {
          // closed before all answers went out
        }
      } else {
        for (ByteBuffer want : answers) {
          expectResponse(in, want);
        }
        // Nothing extra may come: the next answer is the one to this sentinel read.
        ByteBuffer sentinel = ByteBuffer.allocate(Wire.REQUEST_SIZE);
        sentinel
            .put(Wire.TYPE_READ)
            .put((byte) 0)
            .putShort((short) 0)
            .putInt(8)
            .putLong(0x5E47L)
            .putLong(d.key())
            .putLong(d.address());
        os.write(sentinel.array());
        ByteBuffer want = expected(sentinel.flip(), d, closedKey);
        expectResponse(in, want);
      }
    } catch (EOFException e) {
      throw new AssertionError("the server closed where the model expects an answer", e);
    }
    assertServes(server, live);
  }

  /** Authentication with a proof that is right, or wrong in some bytes. */
  static void checkAuth(boolean clientFlag, List<long[]> proofMutations) throws Exception {
    start();
    byte[] clientNonce = Handshake.nonce();
    try (Socket s = open(authServer)) {
      OutputStream os = s.getOutputStream();
      DataInputStream in = new DataInputStream(s.getInputStream());
      os.write(Handshake.hello(clientFlag, clientNonce).array());
      ByteBuffer c = ByteBuffer.allocate(Handshake.CHALLENGE_SIZE);
      in.readFully(c.array());
      assertEquals(Handshake.STATUS_OK, c.get(6));
      assertEquals(1, c.get(7), "authentication required");
      byte[] serverNonce = new byte[Handshake.NONCE_SIZE];
      c.get(8, serverNonce);
      byte[] serverProof = new byte[32];
      c.get(8 + Handshake.NONCE_SIZE, serverProof);
      assertArrayEquals(Handshake.serverProof(SECRET, clientNonce, serverNonce), serverProof);
      byte[] proof = Handshake.clientProof(SECRET, serverNonce, clientNonce);
      boolean changed = false;
      for (long[] m : proofMutations) {
        proof[(int) (m[0] % proof.length)] ^= (byte) m[1];
        changed = true;
      }
      changed =
          changed
              && !java.util.Arrays.equals(
                  proof, Handshake.clientProof(SECRET, serverNonce, clientNonce));
      os.write(proof);
      byte[] welcome = new byte[Handshake.WELCOME_SIZE];
      in.readFully(welcome);
      if (changed) {
        assertEquals(Handshake.STATUS_AUTH_FAILED, welcome[4]);
        expectClosed(s);
      } else {
        assertEquals(Handshake.STATUS_OK, welcome[4]);
        RegionDescriptor d = authLive.descriptors().get(0);
        ByteBuffer r = ByteBuffer.allocate(Wire.REQUEST_SIZE);
        r.put(Wire.TYPE_READ)
            .put((byte) 0)
            .putShort((short) 0)
            .putInt(16)
            .putLong(7)
            .putLong(d.key())
            .putLong(d.address() + 100);
        os.write(r.array());
        expectResponse(in, expected(r.flip(), d, 0));
      }
    }
  }

  /** Random bytes instead of any protocol: the server answers at most a refusal, then closes. */
  static void checkGarbage(byte[] garbage) throws Exception {
    start();
    try (Socket s = open(server)) {
      s.getOutputStream().write(garbage);
      s.shutdownOutput();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[4096];
      try {
        while (in.read(buf) >= 0) {
          // whatever a prefix of the garbage earned; the server must end it
        }
      } catch (SocketException reset) {
        // a reset is a close too
      }
    }
    assertServes(server, live);
  }

  /** The byte a fake server serves at {@code address}. */
  static byte pattern(long address) {
    return (byte) (address * 31 + (address >>> 8));
  }

  /**
   * The reading side's decoders: a fake server answers the client's reads correctly, except for
   * byte flips in its handshake answer and in the response headers, and a stream cut short; then it
   * closes. Every read either completes with exactly the bytes asked for or fails with a typed
   * {@link io.memwire.transfer.TransferException}; none hangs; nothing stays outstanding.
   */
  static void checkClient(
      int reads, List<long[]> handshakeFlips, List<long[]> headerFlips, long cutPoint, boolean cut)
      throws Exception {
    start();
    try (java.net.ServerSocket ss =
        new java.net.ServerSocket(0, 10, java.net.InetAddress.getLoopbackAddress())) {
      java.net.InetSocketAddress peer =
          new java.net.InetSocketAddress(ss.getInetAddress(), ss.getLocalPort());
      java.util.concurrent.CompletableFuture<Void> fake =
          java.util.concurrent.CompletableFuture.runAsync(
              () -> {
                try (Socket s = ss.accept()) {
                  s.setSoTimeout(20_000);
                  fakeServer(s, reads, handshakeFlips, headerFlips, cutPoint, cut);
                } catch (IOException e) {
                  // the client gave up on the handshake: fine, its side is checked below
                }
              });
      io.memwire.transfer.Connection c;
      try {
        c = client.connection(peer);
      } catch (io.memwire.transfer.TransferException refused) {
        ss.close(); // ends the fake server's accept if the client never reached it
        fake.get(30, TimeUnit.SECONDS);
        return; // a mangled handshake answer refused with a typed error
      }
      RegionDescriptor d = new RegionDescriptor(ProviderKind.TCP, peer, 42, 1 << 20, 1 << 20);
      List<ReadRequest> rs = new java.util.ArrayList<>();
      for (int i = 0; i < reads; i++) {
        rs.add(ReadRequest.of(d, i * 10_000L, 100 + 37 * i)); // distinct lengths
      }
      List<java.util.concurrent.CompletableFuture<TransferBuffer>> fs = c.read(rs).results();
      fake.get(30, TimeUnit.SECONDS);
      for (int i = 0; i < reads; i++) {
        try {
          TransferBuffer b = fs.get(i).get(30, TimeUnit.SECONDS);
          ByteBuffer got = b.nioBuffer();
          assertEquals(rs.get(i).length(), got.remaining());
          for (int j = 0; j < rs.get(i).length(); j++) {
            assertEquals(
                pattern((1L << 20) + i * 10_000L + j),
                got.get(got.position() + j),
                "byte " + j + " of read " + i);
          }
          b.release();
        } catch (java.util.concurrent.ExecutionException e) {
          assertTrue(
              e.getCause() instanceof io.memwire.transfer.TransferException,
              "untyped failure: " + e.getCause());
        }
      }
    }
    assertEquals(0, client.stats().outstandingRequests());
    assertEquals(0, client.stats().poolBuffersOutstanding());
  }

  private static void fakeServer(
      Socket s,
      int reads,
      List<long[]> handshakeFlips,
      List<long[]> headerFlips,
      long cutPoint,
      boolean cut)
      throws IOException {
    DataInputStream in = new DataInputStream(s.getInputStream());
    OutputStream os = s.getOutputStream();
    in.readFully(new byte[Handshake.HELLO_SIZE]);
    ByteBuffer hs = ByteBuffer.allocate(Handshake.CHALLENGE_SIZE + Handshake.WELCOME_SIZE);
    hs.put(Handshake.challenge(Handshake.STATUS_OK, false, Handshake.nonce(), null))
        .put(Handshake.welcome(Handshake.STATUS_OK));
    for (long[] f : handshakeFlips) {
      hs.array()[(int) (f[0] % hs.capacity())] ^= (byte) f[1];
    }
    os.write(hs.array());
    os.flush();
    ByteBuffer req = ByteBuffer.allocate(reads * Wire.REQUEST_SIZE);
    in.readFully(req.array());
    ByteBuffer out =
        ByteBuffer.allocate(reads * Wire.RESPONSE_HEADER_SIZE + reads * 100 + 37 * reads * reads);
    List<Integer> headerAt = new java.util.ArrayList<>();
    for (int i = 0; i < reads; i++) {
      int length = req.getInt(i * Wire.REQUEST_SIZE + 4);
      long id = req.getLong(i * Wire.REQUEST_SIZE + 8);
      long address = req.getLong(i * Wire.REQUEST_SIZE + 24);
      headerAt.add(out.position());
      out.put(Wire.TYPE_DATA).put(Wire.STATUS_OK).putShort((short) 0).putInt(length).putLong(id);
      for (int j = 0; j < length; j++) {
        out.put(pattern(address + j));
      }
    }
    for (long[] f : headerFlips) {
      int h = (int) (f[0] % reads);
      int byteInHeader = (int) ((f[0] / reads) % Wire.RESPONSE_HEADER_SIZE);
      out.array()[headerAt.get(h) + byteInHeader] ^= (byte) f[1];
    }
    int end = cut ? (int) (cutPoint % (out.position() + 1)) : out.position();
    os.write(out.array(), 0, end);
    os.flush();
  }

  private static final Random PICK = new Random(1);

  static void assertServes(TransferNode n, MemoryRegion region) throws Exception {
    int offset;
    synchronized (PICK) {
      offset = PICK.nextInt(REGION_SIZE - 64);
    }
    try (Socket s = open(n)) {
      OutputStream os = s.getOutputStream();
      DataInputStream in = new DataInputStream(s.getInputStream());
      os.write(Handshake.hello(false, Handshake.nonce()).array());
      in.readFully(new byte[Handshake.CHALLENGE_SIZE + Handshake.WELCOME_SIZE]);
      RegionDescriptor d = region.descriptors().get(0);
      ByteBuffer r = ByteBuffer.allocate(Wire.REQUEST_SIZE);
      r.put(Wire.TYPE_READ)
          .put((byte) 0)
          .putShort((short) 0)
          .putInt(64)
          .putLong(1)
          .putLong(d.key())
          .putLong(d.address() + offset);
      os.write(r.array());
      expectResponse(in, expected(r.flip(), d, closedKey));
    }
  }

  /** The node also still serves a real reader. */
  static void assertServesAReader() throws Exception {
    start();
    try (TransferNode reader = TransferNode.start(TcpRobustnessTest.tcp().build())) {
      TransferBuffer b =
          reader
              .connection(server.localAddress())
              .read(ReadRequest.of(live.remote(), 0, REGION_SIZE))
              .get(30, TimeUnit.SECONDS);
      byte[] got = new byte[REGION_SIZE];
      b.nioBuffer().get(got);
      b.release();
      assertArrayEquals(data, got);
    }
    assertEquals(0, server.stats().asMap().get("loopErrors"), "no I/O thread error");
  }
}
