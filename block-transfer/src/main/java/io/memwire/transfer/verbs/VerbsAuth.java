package io.memwire.transfer.verbs;

import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferTimeoutException;
import io.memwire.transfer.settings.TransportSettings;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Authentication of verbs connections by a shared secret. DiSNI cannot read the private data of an
 * incoming RDMA CM connect request, so the proof cannot ride in the request itself. Instead the
 * connecting node first proves itself over TCP on the serving node's port (the RDMA CM port number
 * in the TCP port space), naming the RDMA CM address its request will come from; the serving node
 * then accepts one connect request from exactly that address within the connect timeout, and
 * destroys every other request before a queue pair exists for it. Challenge and response make each
 * proof fresh (the serving node's nonce), so a recorded exchange cannot be replayed.
 *
 * <pre>
 * client -> HELLO      36 B: u32 magic "MWV1" | u16 version (1) | u16 zero | 16 B client nonce
 *                            | client CM address (4 B IPv4, u16 port) | server address (4 B, u16)
 * server -> CHALLENGE  56 B: u32 magic | u16 version | u8 status | u8 zero | 16 B server nonce
 *                            | 32 B HMAC(secret, "memwire-verbs-server" | HELLO | server nonce)
 * client -> AUTH       32 B: HMAC(secret, "memwire-verbs-client" | HELLO | server nonce)
 * server -> WELCOME     8 B: u32 magic | u8 status | 3 B zero
 * status: 0 ok, 1 authentication failed, 2 unsupported version, 3 wrong addresses
 * </pre>
 *
 * The HELLO carries both sides' identities (addresses) and both proofs cover it, so a proof for one
 * server or one client address is worthless for another.
 */
final class VerbsAuth implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsAuth.class);
  static final int MAGIC = 0x4D575631; // "MWV1"
  static final short VERSION = 1;
  static final int HELLO_SIZE = 36;
  static final int CHALLENGE_SIZE = 56;
  static final int AUTH_SIZE = 32;
  static final int WELCOME_SIZE = 8;
  static final int NONCE_SIZE = 16;
  static final byte OK = 0;
  static final byte AUTH_FAILED = 1;
  static final byte BAD_VERSION = 2;
  static final byte BAD_ADDRESS = 3;

  /** Most admissions waiting for their connect request; beyond it new handshakes are refused. */
  static final int MAX_PENDING = 4096;

  private static final SecureRandom RANDOM = new SecureRandom();

  private final byte[] secret;
  private final ServerSocket socket;
  private final InetSocketAddress self;
  private final long admitNanos;
  private final int ioTimeoutMs;
  private final LongSupplier clock;
  private final Thread thread;

  /** Client CM address -> deadline (clock nanos) of its one admitted connect request. */
  private final Map<InetSocketAddress, Long> admitted = new ConcurrentHashMap<>();

  final LongAdder proofsAccepted = new LongAdder();
  final LongAdder proofsRejected = new LongAdder();
  final LongAdder requestsRefused = new LongAdder();
  private volatile boolean closed;

  /**
   * Serves handshakes on {@code socket} (already bound) for the node at {@code self}; an admitted
   * client address may connect once within {@code admitNanos}.
   */
  VerbsAuth(
      byte[] secret,
      ServerSocket socket,
      InetSocketAddress self,
      long admitNanos,
      int ioTimeoutMs,
      LongSupplier clock,
      String threadName) {
    this.secret = secret.clone();
    this.socket = socket;
    this.self = self;
    this.admitNanos = admitNanos;
    this.ioTimeoutMs = ioTimeoutMs;
    this.clock = clock;
    this.thread = new Thread(this::serve, threadName);
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /**
   * Whether a connect request from {@code cmSource} was announced by an authenticated handshake;
   * consumes the admission.
   */
  boolean admit(InetSocketAddress cmSource) {
    Long deadline = cmSource == null ? null : admitted.remove(cmSource);
    if (deadline != null && clock.getAsLong() - deadline <= 0) {
      return true;
    }
    requestsRefused.increment();
    return false;
  }

  /** The node address handshakes must name. */
  InetSocketAddress address() {
    return self;
  }

  int pending() {
    return admitted.size();
  }

  /** One handshake at a time: each is four small messages, bounded by the I/O timeout. */
  private void serve() {
    while (!closed) {
      Socket s;
      try {
        s = socket.accept();
      } catch (IOException e) {
        if (!closed) {
          LOG.warn("accepting a verbs authentication connection failed: {}", e.toString());
          pause();
        }
        continue;
      }
      try (s) {
        s.setSoTimeout(ioTimeoutMs);
        s.setTcpNoDelay(true);
        handle(s);
      } catch (SocketTimeoutException e) {
        LOG.debug("a verbs authentication peer went quiet: dropped");
      } catch (IOException | RuntimeException e) {
        if (!closed) {
          LOG.debug("verbs authentication exchange failed", e);
        }
      }
    }
  }

  private static void pause() {
    try {
      Thread.sleep(100); // e.g. out of file descriptors: do not spin
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void handle(Socket s) throws IOException {
    DataInputStream in = new DataInputStream(s.getInputStream());
    OutputStream out = s.getOutputStream();
    byte[] hello = new byte[HELLO_SIZE];
    in.readFully(hello);
    ByteBuffer h = ByteBuffer.wrap(hello);
    byte[] serverNonce = nonce();
    if (h.getInt() != MAGIC || h.getShort() != VERSION) {
      out.write(challenge(BAD_VERSION, serverNonce, new byte[32]));
      return;
    }
    h.getShort();
    h.position(h.position() + NONCE_SIZE);
    InetSocketAddress client = address(h);
    InetSocketAddress server = address(h);
    InetAddress tcpPeer = s.getInetAddress();
    out.write(challenge(OK, serverNonce, proof("memwire-verbs-server", hello, serverNonce)));
    out.flush();
    byte[] auth = new byte[AUTH_SIZE];
    in.readFully(auth);
    byte status;
    purgeExpired();
    if (!MessageDigest.isEqual(auth, proof("memwire-verbs-client", hello, serverNonce))) {
      status = AUTH_FAILED;
      proofsRejected.increment();
      LOG.warn(
          "verbs authentication from {} failed: wrong proof (a different {}?)",
          tcpPeer.getHostAddress(),
          TransportSettings.AUTH_SECRET.name());
    } else if (!server.equals(self)
        || client == null
        || !client.getAddress().equals(tcpPeer)
        || admitted.size() >= MAX_PENDING) {
      status = BAD_ADDRESS;
      proofsRejected.increment();
      LOG.warn(
          "verbs authentication from {} refused: it names server {} (this node is {}) and "
              + "client {}, or {} admissions are pending",
          tcpPeer.getHostAddress(),
          server,
          self,
          client,
          admitted.size());
    } else {
      admitted.put(client, clock.getAsLong() + admitNanos);
      proofsAccepted.increment();
      status = OK;
      LOG.debug(
          "verbs peer {} authenticated; admitting its connect request from {}", tcpPeer, client);
    }
    out.write(welcome(status));
    out.flush();
  }

  private void purgeExpired() {
    long now = clock.getAsLong();
    admitted.entrySet().removeIf(e -> now - e.getValue() > 0);
  }

  /**
   * Proves this node to the serving node at {@code server} (its node address) and announces that
   * the connect request will come from {@code ownCm}; checks the server's proof.
   *
   * @throws TransferConnectionException when either side's proof fails or the server refuses
   * @throws TransferTimeoutException when the exchange does not finish by {@code deadlineNanos}
   */
  static void authenticate(
      byte[] secret, InetSocketAddress ownCm, InetSocketAddress server, long deadlineNanos)
      throws TransferException {
    long leftMs = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
    if (leftMs <= 0) {
      throw new TransferTimeoutException("no time left for verbs authentication", server);
    }
    try (Socket s = new Socket()) {
      // From the RDMA address, which the server checks against the announced CM address.
      s.bind(new InetSocketAddress(ownCm.getAddress(), 0));
      s.connect(server, (int) Math.min(Integer.MAX_VALUE, leftMs));
      s.setSoTimeout(
          (int)
              Math.max(
                  1,
                  Math.min(
                      Integer.MAX_VALUE,
                      TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()))));
      s.setTcpNoDelay(true);
      DataInputStream in = new DataInputStream(s.getInputStream());
      OutputStream out = s.getOutputStream();
      byte[] hello = hello(nonce(), ownCm, server);
      out.write(hello);
      out.flush();
      byte[] challenge = new byte[CHALLENGE_SIZE];
      in.readFully(challenge);
      ByteBuffer c = ByteBuffer.wrap(challenge);
      if (c.getInt() != MAGIC || c.getShort() != VERSION) {
        throw new TransferConnectionException(
            "the peer's TCP port "
                + server.getPort()
                + " does not speak Memwire verbs authentication",
            server,
            null);
      }
      byte status = c.get();
      c.get();
      byte[] serverNonce = new byte[NONCE_SIZE];
      c.get(serverNonce);
      byte[] serverProof = new byte[32];
      c.get(serverProof);
      if (status != OK) {
        throw new TransferConnectionException(
            "the peer refused verbs authentication (status " + status + ")", server, null);
      }
      if (!MessageDigest.isEqual(
          serverProof, proof(secret, "memwire-verbs-server", hello, serverNonce))) {
        throw new TransferConnectionException(
            "verbs authentication failed: the peer could not prove it knows "
                + TransportSettings.AUTH_SECRET.name(),
            server,
            null);
      }
      out.write(proof(secret, "memwire-verbs-client", hello, serverNonce));
      out.flush();
      byte[] welcome = new byte[WELCOME_SIZE];
      in.readFully(welcome);
      ByteBuffer w = ByteBuffer.wrap(welcome);
      if (w.getInt() != MAGIC) {
        throw new TransferConnectionException("bad verbs authentication reply", server, null);
      }
      byte result = w.get();
      if (result == AUTH_FAILED) {
        throw new TransferConnectionException(
            "verbs authentication failed: the peer rejected "
                + "this node's proof ("
                + TransportSettings.AUTH_SECRET.name()
                + " differs)",
            server,
            null);
      }
      if (result != OK) {
        throw new TransferConnectionException(
            "the peer refused verbs authentication (status "
                + result
                + ": addresses do not match, or too many pending connections)",
            server,
            null);
      }
    } catch (SocketTimeoutException e) {
      throw new TransferTimeoutException(
          "verbs authentication did not finish within the " + "connect timeout", server);
    } catch (IOException e) {
      throw new TransferConnectionException(
          "verbs authentication with the peer's TCP port "
              + server.getPort()
              + " failed: "
              + e.getMessage()
              + " (does the peer have "
              + TransportSettings.AUTH_SECRET.name()
              + " set? a verbs node with a secret listens for it on its port)",
          server,
          e);
    }
  }

  static byte[] hello(byte[] clientNonce, InetSocketAddress client, InetSocketAddress server) {
    ByteBuffer b = ByteBuffer.allocate(HELLO_SIZE);
    b.putInt(MAGIC).putShort(VERSION).putShort((short) 0).put(clientNonce);
    put(b, client);
    put(b, server);
    return b.array();
  }

  private static void put(ByteBuffer b, InetSocketAddress a) {
    InetAddress ip = a.getAddress();
    b.put(ip instanceof Inet4Address ? ip.getAddress() : new byte[4]);
    b.putShort((short) a.getPort());
  }

  private static InetSocketAddress address(ByteBuffer b) {
    byte[] ip = new byte[4];
    b.get(ip);
    int port = Short.toUnsignedInt(b.getShort());
    try {
      return new InetSocketAddress(InetAddress.getByAddress(ip), port);
    } catch (IOException e) {
      return null;
    }
  }

  private static byte[] challenge(byte status, byte[] serverNonce, byte[] proof) {
    ByteBuffer b = ByteBuffer.allocate(CHALLENGE_SIZE);
    b.putInt(MAGIC).putShort(VERSION).put(status).put((byte) 0).put(serverNonce).put(proof);
    return b.array();
  }

  private static byte[] welcome(byte status) {
    ByteBuffer b = ByteBuffer.allocate(WELCOME_SIZE);
    b.putInt(MAGIC).put(status);
    return b.array();
  }

  private byte[] proof(String role, byte[] hello, byte[] serverNonce) {
    return proof(secret, role, hello, serverNonce);
  }

  static byte[] proof(byte[] secret, String role, byte[] hello, byte[] serverNonce) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(role.getBytes(StandardCharsets.US_ASCII));
      mac.update(hello);
      mac.update(serverNonce);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }

  static byte[] nonce() {
    byte[] n = new byte[NONCE_SIZE];
    RANDOM.nextBytes(n);
    return n;
  }

  @Override
  public void close() {
    closed = true;
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing
    }
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    admitted.clear();
    Arrays.fill(secret, (byte) 0);
  }
}
