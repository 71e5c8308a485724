package io.memwire.transfer.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferTimeoutException;
import io.memwire.transfer.testing.Await;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The verbs authentication handshake over loopback TCP: no RDMA device needed. */
class VerbsAuthTest {
  private static final byte[] SECRET = "correct horse".getBytes(StandardCharsets.UTF_8);

  /** The serving port's MTUs every WELCOME names: rxe on a 1500-byte interface. */
  private static final PortMtu SERVER_MTU =
      new PortMtu(OptionalInt.of(1024), "eth0", OptionalInt.of(1500));

  private final List<VerbsAuth> servers = new ArrayList<>();
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  @AfterEach
  void close() {
    servers.forEach(VerbsAuth::close);
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      assertFalse(t.getName().startsWith("test-auth") && t.isAlive(), "auth thread left: " + t);
    }
  }

  private VerbsAuth server(byte[] secret) throws Exception {
    ServerSocket ss = ServerSocketChannel.open().socket();
    ss.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
    InetSocketAddress self =
        new InetSocketAddress(InetAddress.getLoopbackAddress(), ss.getLocalPort());
    VerbsAuth a =
        new VerbsAuth(
            secret,
            () -> SERVER_MTU,
            ss,
            self,
            TimeUnit.SECONDS.toNanos(10),
            5000,
            clock::get,
            "test-auth-" + servers.size());
    servers.add(a);
    a.start();
    return a;
  }

  private static InetSocketAddress addressOf(VerbsAuth a) {
    return a.address();
  }

  private static long deadline() {
    return System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
  }

  private static InetSocketAddress cm(int port) {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
  }

  @Test
  void theRightSecretAdmitsExactlyOneRequestFromTheAnnouncedAddress() throws Exception {
    VerbsAuth s = server(SECRET);
    VerbsAuthClient.authenticate(SECRET, cm(40001), addressOf(s), deadline());
    assertEquals(1, s.proofsAccepted.sum());
    assertFalse(s.admit(cm(40002)), "another CM port was not announced");
    assertTrue(s.admit(cm(40001)));
    assertFalse(s.admit(cm(40001)), "an admission is used once");
    assertFalse(s.admit(null));
    assertEquals(3, s.requestsRefused.sum());
  }

  /**
   * The port is open to the fabric's network: peers that connect and send nothing, or half a HELLO,
   * must not keep a node from authenticating. Twice the cap of them are connected while a peer
   * authenticates within 3 s, less than one silent peer's I/O timeout (5 s); a silent one is closed
   * once that timeout has passed on the server's clock.
   */
  @Test
  void silentAndSlowPeersDoNotKeepOthersFromAuthenticating() throws Exception {
    VerbsAuth s = server(SECRET);
    List<Socket> peers = new ArrayList<>();
    try {
      for (int i = 0; i < 2 * VerbsAuth.MAX_HANDSHAKES; i++) {
        Socket p = new Socket(s.address().getAddress(), s.address().getPort());
        if (i % 2 == 0) {
          p.getOutputStream().write(new byte[] {1, 2, 3});
        }
        peers.add(p);
      }
      VerbsAuthClient.authenticate(
          SECRET, cm(40011), addressOf(s), System.nanoTime() + TimeUnit.SECONDS.toNanos(3));
      assertTrue(s.admit(cm(40011)));
      Socket last = peers.get(peers.size() - 1);
      // The I/O timeout is decided on the server's clock: past it, the next tick drops the peer.
      clock.addAndGet(TimeUnit.SECONDS.toNanos(6));
      last.setSoTimeout(15_000);
      assertEquals(-1, last.getInputStream().read(), "a silent peer is closed, unanswered");
    } finally {
      for (Socket p : peers) {
        p.close();
      }
    }
  }

  @Test
  void anAdmissionExpiresAfterTheConnectTimeout() throws Exception {
    VerbsAuth s = server(SECRET);
    VerbsAuthClient.authenticate(SECRET, cm(40003), addressOf(s), deadline());
    clock.addAndGet(TimeUnit.SECONDS.toNanos(11));
    assertFalse(s.admit(cm(40003)));
    assertEquals(0, s.pending(), "the expired admission is gone");
  }

  @Test
  void aWrongSecretIsRejectedOnBothSides() throws Exception {
    VerbsAuth s = server(SECRET);
    // The client's secret differs: the server's proof does not verify at the client.
    TransferConnectionException e =
        assertThrows(
            TransferConnectionException.class,
            () ->
                VerbsAuthClient.authenticate(
                    "wrong".getBytes(StandardCharsets.UTF_8), cm(40004), addressOf(s), deadline()));
    assertTrue(e.getMessage().contains("could not prove it knows authSecret"), e.getMessage());
    assertFalse(s.admit(cm(40004)));
  }

  @Test
  void aClientThatCannotProveItselfIsNotAdmitted() throws Exception {
    VerbsAuth s = server(SECRET);
    InetSocketAddress at = addressOf(s);
    byte[] hello = VerbsAuthWire.hello(VerbsAuthWire.nonce(), cm(40005), at);
    byte status =
        exchange(
            at,
            hello,
            nonce ->
                VerbsAuthWire.proof(
                    "guess".getBytes(StandardCharsets.UTF_8),
                    "memwire-verbs-client",
                    hello,
                    nonce));
    assertEquals(VerbsAuthWire.AUTH_FAILED, status);
    assertEquals(1, s.proofsRejected.sum());
    assertFalse(s.admit(cm(40005)));
  }

  @Test
  void aRecordedExchangeCannotBeReplayed() throws Exception {
    VerbsAuth s = server(SECRET);
    InetSocketAddress at = addressOf(s);
    byte[] hello = VerbsAuthWire.hello(VerbsAuthWire.nonce(), cm(40006), at);
    byte[][] recorded = new byte[1][];
    assertEquals(
        VerbsAuthWire.OK,
        exchange(
            at,
            hello,
            nonce ->
                recorded[0] = VerbsAuthWire.proof(SECRET, "memwire-verbs-client", hello, nonce)));
    assertTrue(s.admit(cm(40006)));
    // The same HELLO and AUTH again: the server's nonce is new, so the old proof fails.
    assertEquals(VerbsAuthWire.AUTH_FAILED, exchange(at, hello, nonce -> recorded[0]));
    assertFalse(s.admit(cm(40006)));
  }

  @Test
  void aProofForAnotherServerOrAnotherClientAddressIsRefused() throws Exception {
    VerbsAuth s = server(SECRET);
    InetSocketAddress at = addressOf(s);
    InetSocketAddress elsewhere = new InetSocketAddress(at.getAddress(), at.getPort() + 1);
    byte[] hello = VerbsAuthWire.hello(VerbsAuthWire.nonce(), cm(40007), elsewhere);
    assertEquals(
        VerbsAuthWire.BAD_ADDRESS,
        exchange(
            at, hello, nonce -> VerbsAuthWire.proof(SECRET, "memwire-verbs-client", hello, nonce)));
    byte[] spoofed =
        VerbsAuthWire.hello(
            VerbsAuthWire.nonce(),
            new InetSocketAddress(InetAddress.getByName("10.9.9.9"), 40007),
            at);
    assertEquals(
        VerbsAuthWire.BAD_ADDRESS,
        exchange(
            at,
            spoofed,
            nonce -> VerbsAuthWire.proof(SECRET, "memwire-verbs-client", spoofed, nonce)),
        "the announced CM address must be the TCP peer's");
    assertFalse(s.admit(cm(40007)));
  }

  @Test
  void noListenerMeansTheClientFailsWithTheHint() throws Exception {
    ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    InetSocketAddress gone =
        new InetSocketAddress(InetAddress.getLoopbackAddress(), closed.getLocalPort());
    closed.close();
    TransferException e =
        assertThrows(
            TransferException.class,
            () -> VerbsAuthClient.authenticate(SECRET, cm(40008), gone, deadline()));
    assertInstanceOf(TransferConnectionException.class, e);
    assertTrue(e.getMessage().contains("does the peer have authSecret set?"), e.getMessage());
  }

  @Test
  void aSilentPeerTimesOut() throws Exception {
    try (ServerSocket mute = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      InetSocketAddress at =
          new InetSocketAddress(InetAddress.getLoopbackAddress(), mute.getLocalPort());
      long t0 = System.nanoTime();
      assertThrows(
          TransferTimeoutException.class,
          () ->
              VerbsAuthClient.authenticate(
                  SECRET, cm(40009), at, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500)));
      assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(20));
    }
  }

  @Test
  void theWelcomeTellsTheServingPortsMtus() throws Exception {
    VerbsAuth s = server(SECRET);
    PortMtu m = VerbsAuthClient.authenticate(SECRET, cm(40031), addressOf(s), deadline());
    assertEquals(OptionalInt.of(1024), m.active());
    assertEquals(OptionalInt.of(1500), m.netdevMtu());
    assertTrue(s.admit(cm(40031)));
  }

  /**
   * Without a secret the port answers open: an open CHALLENGE and the WELCOME with the MTUs at
   * once, no proof asked, nothing admitted.
   */
  @Test
  void anOpenNodeTellsItsMtusAndAdmitsNothing() throws Exception {
    VerbsAuth s = server(null);
    PortMtu m = VerbsAuthClient.query(cm(40032), addressOf(s), deadline());
    assertEquals(OptionalInt.of(1024), m.active());
    assertEquals(OptionalInt.of(1500), m.netdevMtu());
    assertFalse(s.admit(cm(40032)), "an open node admits nothing: its acceptor does not ask");
    assertEquals(0, s.proofsAccepted.sum());
    // On the wire: CHALLENGE flagged OPEN, the WELCOME behind it, then the server closes.
    try (Socket c = new Socket()) {
      c.connect(addressOf(s), 5000);
      c.setSoTimeout(10_000);
      c.getOutputStream()
          .write(VerbsAuthWire.hello(VerbsAuthWire.nonce(), cm(40033), addressOf(s)));
      DataInputStream in = new DataInputStream(c.getInputStream());
      byte[] both = new byte[VerbsAuthWire.CHALLENGE_SIZE + VerbsAuthWire.WELCOME_SIZE];
      in.readFully(both);
      assertEquals(VerbsAuthWire.OK, both[6]);
      assertEquals(VerbsAuthWire.OPEN, both[7]);
      assertArrayEquals(
          new byte[] {0x4D, 0x57, 0x56, 0x31, 0, 3, 0x05, (byte) 0xDC},
          Arrays.copyOfRange(both, VerbsAuthWire.CHALLENGE_SIZE, both.length),
          "WELCOME: magic, status ok, ibv_mtu 3 (1024), interface MTU 1500");
      assertEquals(-1, in.read());
    }
  }

  @Test
  void aNodeWithoutTheSecretIsToldThePeerRequiresIt() throws Exception {
    VerbsAuth s = server(SECRET);
    TransferConnectionException e =
        assertThrows(
            TransferConnectionException.class,
            () -> VerbsAuthClient.query(cm(40034), addressOf(s), deadline()));
    assertTrue(
        e.getMessage().contains("the peer requires verbs authentication (authSecret is set there"),
        e.getMessage());
    assertFalse(s.admit(cm(40034)));
  }

  @Test
  void aNodeWithASecretRefusesAnOpenPeer() throws Exception {
    VerbsAuth s = server(null);
    TransferConnectionException e =
        assertThrows(
            TransferConnectionException.class,
            () -> VerbsAuthClient.authenticate(SECRET, cm(40035), addressOf(s), deadline()));
    assertTrue(e.getMessage().contains("the peer has no authSecret"), e.getMessage());
  }

  /** A peer from before the open handshake has no listener without a secret: the MTU is unknown. */
  @Test
  void theOpenQueryOfANodeWithoutAListenerGivesNothing() throws Exception {
    ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    InetSocketAddress gone =
        new InetSocketAddress(InetAddress.getLoopbackAddress(), closed.getLocalPort());
    closed.close();
    assertEquals(null, VerbsAuthClient.query(cm(40036), gone, deadline()));
  }

  @Test
  void theOpenQueryOfASilentPortEndsAtItsDeadline() throws Exception {
    try (ServerSocket mute = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      InetSocketAddress at =
          new InetSocketAddress(InetAddress.getLoopbackAddress(), mute.getLocalPort());
      long t0 = System.nanoTime();
      assertEquals(
          null,
          VerbsAuthClient.query(
              cm(40037), at, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300)));
      assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(20));
    }
  }

  /**
   * A node from before the MTUs were sent: its WELCOME has zeros there, which read as unknown, and
   * the handshake succeeds as before.
   */
  @Test
  void anOlderServersWelcomeReadsAsUnknownMtus() throws Exception {
    try (ServerSocket old = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      InetSocketAddress at =
          new InetSocketAddress(InetAddress.getLoopbackAddress(), old.getLocalPort());
      Thread t =
          new Thread(
              () -> {
                try (Socket c = old.accept()) {
                  DataInputStream in = new DataInputStream(c.getInputStream());
                  byte[] hello = new byte[VerbsAuthWire.HELLO_SIZE];
                  in.readFully(hello);
                  byte[] nonce = VerbsAuthWire.nonce();
                  // The old encoding: u8 zero after the status, and a WELCOME of 3 zero bytes.
                  ByteBuffer ch = ByteBuffer.allocate(VerbsAuthWire.CHALLENGE_SIZE);
                  ch.putInt(VerbsAuthWire.MAGIC).putShort((short) 1).put((byte) 0).put((byte) 0);
                  ch.put(nonce)
                      .put(VerbsAuthWire.proof(SECRET, "memwire-verbs-server", hello, nonce));
                  c.getOutputStream().write(ch.array());
                  in.readFully(new byte[VerbsAuthWire.AUTH_SIZE]);
                  c.getOutputStream()
                      .write(ByteBuffer.allocate(8).putInt(VerbsAuthWire.MAGIC).array());
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              },
              "test-auth-old");
      t.setDaemon(true);
      t.start();
      PortMtu m = VerbsAuthClient.authenticate(SECRET, cm(40038), at, deadline());
      assertFalse(m.known());
      assertEquals(PortMtu.UNKNOWN, m);
      t.join(10_000);
    }
  }

  private interface Prover {
    byte[] proof(byte[] serverNonce);
  }

  /** Runs the client side by hand; returns the server's final status. */
  private static byte exchange(InetSocketAddress at, byte[] hello, Prover prover) throws Exception {
    try (Socket s = new Socket()) {
      s.connect(at, 5000);
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      DataInputStream in = new DataInputStream(s.getInputStream());
      out.write(hello);
      byte[] challenge = new byte[VerbsAuthWire.CHALLENGE_SIZE];
      in.readFully(challenge);
      ByteBuffer c = ByteBuffer.wrap(challenge);
      assertEquals(VerbsAuthWire.MAGIC, c.getInt());
      c.getShort();
      assertEquals(VerbsAuthWire.OK, c.get());
      c.get();
      byte[] nonce = new byte[VerbsAuthWire.NONCE_SIZE];
      c.get(nonce);
      byte[] serverProof = new byte[32];
      c.get(serverProof);
      assertArrayEquals(
          VerbsAuthWire.proof(SECRET, "memwire-verbs-server", hello, nonce), serverProof);
      out.write(prover.proof(nonce));
      byte[] welcome = new byte[VerbsAuthWire.WELCOME_SIZE];
      in.readFully(welcome);
      return welcome[4];
    }
  }

  /**
   * At the handshake cap, peers at one address that never authenticate push out only their own
   * handshakes: a peer from another address that paused after its CHALLENGE still authenticates
   * after twice the cap of them connected behind it (evicting the oldest handshake of all closed it
   * first).
   */
  @Test
  void churnersAtOneAddressCannotEvictAPeerFromAnother() throws Exception {
    VerbsAuth s = server(SECRET);
    List<SocketChannel> churners = new ArrayList<>();
    try (Socket honest = new Socket()) {
      honest.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      honest.connect(s.address(), 5_000);
      honest.setSoTimeout(20_000);
      byte[] hello = VerbsAuthWire.hello(VerbsAuthWire.nonce(), cm(40021), addressOf(s));
      honest.getOutputStream().write(hello);
      DataInputStream in = new DataInputStream(honest.getInputStream());
      byte[] challenge = new byte[VerbsAuthWire.CHALLENGE_SIZE];
      in.readFully(challenge); // its handshake is open on the server, waiting for the proof
      int n = 2 * VerbsAuth.MAX_HANDSHAKES;
      for (int i = 0; i < n; i++) {
        SocketChannel c = SocketChannel.open();
        churners.add(c);
        c.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
        c.connect(s.address());
        c.configureBlocking(false);
      }
      // Past the cap, each churner closed a handshake: at least n - cap of them are closed (n - cap
      // + 1 once the last is accepted), the honest peer's too if it were evictable.
      int evicted = n - VerbsAuth.MAX_HANDSHAKES;
      ByteBuffer scratch = ByteBuffer.allocate(64);
      boolean[] closed = new boolean[n];
      Await.until(
          () -> "churners closed by the server: " + count(closed) + ", want " + evicted,
          Duration.ofSeconds(20),
          () -> {
            for (int i = 0; i < n; i++) {
              try {
                scratch.clear();
                closed[i] |= churners.get(i).read(scratch) < 0;
              } catch (java.io.IOException e) {
                closed[i] = true;
              }
            }
            return count(closed) >= evicted;
          });
      ByteBuffer c = ByteBuffer.wrap(challenge, VerbsAuthWire.CHALLENGE_SIZE - 48, 16);
      byte[] serverNonce = new byte[VerbsAuthWire.NONCE_SIZE];
      c.get(serverNonce);
      honest
          .getOutputStream()
          .write(VerbsAuthWire.proof(SECRET, "memwire-verbs-client", hello, serverNonce));
      byte[] welcome = new byte[VerbsAuthWire.WELCOME_SIZE];
      in.readFully(welcome);
      assertEquals(VerbsAuthWire.OK, welcome[4], "the paused peer authenticated");
      assertTrue(s.admit(cm(40021)));
    } finally {
      for (SocketChannel ch : churners) {
        ch.close();
      }
    }
  }

  private static int count(boolean[] b) {
    int n = 0;
    for (boolean x : b) {
      n += x ? 1 : 0;
    }
    return n;
  }
}
