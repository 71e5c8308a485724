package io.memwire.transfer.verbs;

import static io.memwire.transfer.verbs.VerbsAuthWire.AUTH_FAILED;
import static io.memwire.transfer.verbs.VerbsAuthWire.BAD_ADDRESS;
import static io.memwire.transfer.verbs.VerbsAuthWire.BAD_VERSION;
import static io.memwire.transfer.verbs.VerbsAuthWire.CHALLENGE_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.HELLO_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.MAGIC;
import static io.memwire.transfer.verbs.VerbsAuthWire.NONCE_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.OK;
import static io.memwire.transfer.verbs.VerbsAuthWire.OPEN;
import static io.memwire.transfer.verbs.VerbsAuthWire.VERSION;
import static io.memwire.transfer.verbs.VerbsAuthWire.WELCOME_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.challenge;
import static io.memwire.transfer.verbs.VerbsAuthWire.nonce;
import static io.memwire.transfer.verbs.VerbsAuthWire.welcome;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.settings.TransportSettings;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The serving side's answers in the verbs handshake ({@link VerbsAuthWire}'s messages) and the
 * admissions they grant: a HELLO gets its CHALLENGE, a proof that holds for an address that names
 * this node admits one connect request from the client's announced RDMA CM address within the
 * admission time. {@link VerbsAuth} carries the bytes over its TCP port and asks {@link #admit} for
 * each connect request.
 *
 * <p>Threads: {@link #onHello} and {@link #onAuth} run on the authentication thread only; {@link
 * #admit} runs on the RDMA CM thread. The admissions are a concurrent map and the counters adders,
 * so no lock is needed; the secret is read only on the authentication thread and wiped by {@link
 * #wipe} once that thread has stopped.
 */
final class VerbsAuthExchange {
  // VerbsAuth's logger, so the log lines keep their category.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsAuth.class);

  /** Most admissions waiting for their connect request; beyond it new handshakes are refused. */
  static final int MAX_PENDING = 4096;

  /** The shared secret, or null: then the port only hands out {@link #mtu} (open). */
  private final byte[] secret;

  /** This node's port MTUs now, for every WELCOME. */
  private final Supplier<PortMtu> mtu;

  private final InetSocketAddress self;
  private final long admitNanos;
  private final NanoClock clock;

  /** Client CM address -> deadline (clock nanos) of its one admitted connect request. */
  private final Map<InetSocketAddress, Long> admitted = new ConcurrentHashMap<>();

  final LongAdder proofsAccepted = new LongAdder();
  final LongAdder proofsRejected = new LongAdder();
  final LongAdder requestsRefused = new LongAdder();

  /**
   * Answers for the node at {@code self}; an admitted client address may connect once within {@code
   * admitNanos}. A null {@code secret} answers open: MTUs only, nothing admitted.
   */
  VerbsAuthExchange(
      byte[] secret,
      Supplier<PortMtu> mtu,
      InetSocketAddress self,
      long admitNanos,
      NanoClock clock) {
    this.secret = secret == null ? null : secret.clone();
    this.mtu = mtu;
    this.self = self;
    this.admitNanos = admitNanos;
    this.clock = clock;
  }

  /** One handshake in progress; confined to the serving thread. */
  static final class Handshake {
    final SocketChannel channel;
    final SelectionKey key;
    final InetAddress peer;
    final long deadlineNanos;
    ByteBuffer in = ByteBuffer.allocate(HELLO_SIZE);
    ByteBuffer out;
    byte[] hello;
    byte[] serverNonce;
    boolean last;

    Handshake(SocketChannel channel, SelectionKey key, InetAddress peer, long deadlineNanos) {
      this.channel = channel;
      this.key = key;
      this.peer = peer;
      this.deadlineNanos = deadlineNanos;
    }
  }

  /**
   * Whether a connect request from {@code cmSource} was announced by an authenticated handshake;
   * consumes the admission.
   */
  boolean admit(InetSocketAddress cmSource) {
    Long deadline = cmSource == null ? null : admitted.remove(cmSource);
    if (deadline != null && clock.nanoTime() - deadline <= 0) {
      return true;
    }
    requestsRefused.increment();
    return false;
  }

  int pending() {
    return admitted.size();
  }

  /**
   * The CHALLENGE answering a HELLO; a bad version's is the last message, and so is an open one,
   * sent with the WELCOME behind it.
   */
  byte[] onHello(Handshake h) {
    ByteBuffer b = ByteBuffer.wrap(h.hello);
    h.serverNonce = nonce();
    if (b.getInt() != MAGIC || b.getShort() != VERSION) {
      h.last = true;
      return challenge(BAD_VERSION, (byte) 0, h.serverNonce, new byte[32]);
    }
    if (secret == null) {
      h.last = true;
      ByteBuffer both = ByteBuffer.allocate(CHALLENGE_SIZE + WELCOME_SIZE);
      both.put(challenge(OK, OPEN, h.serverNonce, new byte[32]));
      both.put(welcome(OK, mtu.get()));
      return both.array();
    }
    return challenge(
        OK, (byte) 0, h.serverNonce, proof("memwire-verbs-server", h.hello, h.serverNonce));
  }

  /** The WELCOME answering an AUTH: admits the announced address when the proof holds. */
  byte[] onAuth(Handshake h, byte[] auth) {
    ByteBuffer b = ByteBuffer.wrap(h.hello);
    b.position(8 + NONCE_SIZE);
    InetSocketAddress client = VerbsAuthWire.address(b);
    InetSocketAddress server = VerbsAuthWire.address(b);
    InetAddress tcpPeer = h.peer;
    byte status;
    purgeExpired();
    if (!MessageDigest.isEqual(auth, proof("memwire-verbs-client", h.hello, h.serverNonce))) {
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
      admitted.put(client, clock.nanoTime() + admitNanos);
      proofsAccepted.increment();
      status = OK;
      LOG.debug(
          "verbs peer {} authenticated; admitting its connect request from {}", tcpPeer, client);
    }
    return welcome(status, status == OK ? mtu.get() : PortMtu.UNKNOWN);
  }

  private void purgeExpired() {
    long now = clock.nanoTime();
    admitted.entrySet().removeIf(e -> now - e.getValue() > 0);
  }

  private byte[] proof(String role, byte[] hello, byte[] serverNonce) {
    return VerbsAuthWire.proof(secret, role, hello, serverNonce);
  }

  /** Forgets every admission and wipes the secret (the authentication thread has stopped). */
  void wipe() {
    admitted.clear();
    if (secret != null) {
      Arrays.fill(secret, (byte) 0);
    }
  }
}
