package io.memwire.transfer.verbs;

import static io.memwire.transfer.verbs.VerbsAuthWire.AUTH_FAILED;
import static io.memwire.transfer.verbs.VerbsAuthWire.AUTH_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.BAD_ADDRESS;
import static io.memwire.transfer.verbs.VerbsAuthWire.BAD_VERSION;
import static io.memwire.transfer.verbs.VerbsAuthWire.HELLO_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.MAGIC;
import static io.memwire.transfer.verbs.VerbsAuthWire.NONCE_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.OK;
import static io.memwire.transfer.verbs.VerbsAuthWire.VERSION;
import static io.memwire.transfer.verbs.VerbsAuthWire.challenge;
import static io.memwire.transfer.verbs.VerbsAuthWire.nonce;
import static io.memwire.transfer.verbs.VerbsAuthWire.welcome;

import io.memwire.transfer.settings.TransportSettings;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
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
 * <p>This class is the serving side (one thread); {@link VerbsAuthClient} is the connecting side
 * and {@link VerbsAuthWire} has the messages.
 *
 * <p>The HELLO carries both sides' identities (addresses) and both proofs cover it, so a proof for
 * one server or one client address is worthless for another.
 */
final class VerbsAuth implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsAuth.class);

  /** Most admissions waiting for their connect request; beyond it new handshakes are refused. */
  static final int MAX_PENDING = 4096;

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
    InetSocketAddress client = VerbsAuthWire.address(h);
    InetSocketAddress server = VerbsAuthWire.address(h);
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

  private byte[] proof(String role, byte[] hello, byte[] serverNonce) {
    return VerbsAuthWire.proof(secret, role, hello, serverNonce);
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
