package io.memwire.transfer.verbs;

import static io.memwire.transfer.verbs.VerbsAuthWire.AUTH_FAILED;
import static io.memwire.transfer.verbs.VerbsAuthWire.AUTH_SIZE;
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
import io.memwire.transfer.spi.HandshakeEviction;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
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
 * <p>This class is the serving side (one selector thread); {@link VerbsAuthClient} is the
 * connecting side and {@link VerbsAuthWire} has the messages.
 *
 * <p>The HELLO carries both sides' identities (addresses) and both proofs cover it, so a proof for
 * one server or one client address is worthless for another.
 *
 * <p>The WELCOME names this node's port MTUs, read when it is sent. A node without a secret serves
 * the same port "open": it answers a HELLO with a CHALLENGE flagged {@link VerbsAuthWire#OPEN} and
 * the WELCOME at once, and admits nothing (its acceptor does not ask), so a connecting node learns
 * the MTUs in every configuration and can refuse a path MTU this node cannot send in.
 */
final class VerbsAuth implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsAuth.class);

  /** Most admissions waiting for their connect request; beyond it new handshakes are refused. */
  static final int MAX_PENDING = 4096;

  /**
   * Most handshakes in progress at once; one more closes the oldest of the source address holding
   * the most.
   */
  static final int MAX_HANDSHAKES = 64;

  private static final long TICK_MS = 250;

  /** The shared secret, or null: then the port only hands out {@link #mtu} (open). */
  private final byte[] secret;

  /** This node's port MTUs now, for every WELCOME. */
  private final Supplier<PortMtu> mtu;

  private final ServerSocket socket;
  private final InetSocketAddress self;
  private final long admitNanos;
  private final int ioTimeoutMs;
  private final NanoClock clock;
  private final Selector selector;
  private final Thread thread;

  /** Client CM address -> deadline (clock nanos) of its one admitted connect request. */
  private final Map<InetSocketAddress, Long> admitted = new ConcurrentHashMap<>();

  final LongAdder proofsAccepted = new LongAdder();
  final LongAdder proofsRejected = new LongAdder();
  final LongAdder requestsRefused = new LongAdder();
  private volatile boolean closed;

  /**
   * Serves handshakes on {@code socket} (already bound; made by a {@link ServerSocketChannel}) for
   * the node at {@code self}; an admitted client address may connect once within {@code
   * admitNanos}, and a handshake must finish within {@code ioTimeoutMs} of its accept. A null
   * {@code secret} serves the port open: MTUs only, nothing admitted.
   *
   * @throws IOException when no selector can be opened
   */
  VerbsAuth(
      byte[] secret,
      Supplier<PortMtu> mtu,
      ServerSocket socket,
      InetSocketAddress self,
      long admitNanos,
      int ioTimeoutMs,
      NanoClock clock,
      String threadName)
      throws IOException {
    if (socket.getChannel() == null) {
      throw new IllegalArgumentException("the authentication socket needs a channel");
    }
    this.selector = Selector.open();
    this.secret = secret == null ? null : secret.clone();
    this.mtu = mtu;
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
    if (deadline != null && clock.nanoTime() - deadline <= 0) {
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

  /** One handshake in progress; confined to the serving thread. */
  private static final class Handshake {
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
   * Serves every handshake on one selector thread that never waits for a peer: each must finish
   * within the I/O timeout from its accept, and at most {@link #MAX_HANDSHAKES} are in progress
   * (one more closes one by {@link HandshakeEviction}), so peers that connect and send nothing, or
   * a byte at a time, cannot keep others from connecting.
   */
  private void serve() {
    LinkedHashSet<Handshake> open = new LinkedHashSet<>();
    try {
      ServerSocketChannel server = socket.getChannel();
      server.configureBlocking(false);
      SelectionKey accepting = server.register(selector, SelectionKey.OP_ACCEPT);
      while (!closed) {
        selector.select(TICK_MS);
        Iterator<SelectionKey> it = selector.selectedKeys().iterator();
        while (it.hasNext()) {
          SelectionKey key = it.next();
          it.remove();
          if (!key.isValid()) {
            continue;
          }
          if (key == accepting) {
            accept(server, accepting, open);
            continue;
          }
          Handshake h = (Handshake) key.attachment();
          try {
            if (key.isReadable()) {
              read(h);
            } else if (key.isWritable()) {
              write(h, open);
            }
          } catch (IOException | RuntimeException e) {
            if (!closed) {
              LOG.debug("verbs authentication exchange failed", e);
            }
            end(h, open);
          }
        }
        long now = clock.nanoTime();
        if (accepting.interestOps() == 0) {
          accepting.interestOps(SelectionKey.OP_ACCEPT); // paused for a tick after a failure
        }
        for (Handshake h : open.toArray(new Handshake[0])) {
          if (now - h.deadlineNanos > 0) {
            LOG.debug("a verbs authentication peer went quiet: dropped");
            end(h, open);
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      if (!closed) {
        LOG.error("verbs authentication stopped: no peer can connect to this node now", e);
      }
    } finally {
      for (Handshake h : open.toArray(new Handshake[0])) {
        end(h, open);
      }
    }
  }

  private void accept(ServerSocketChannel server, SelectionKey accepting, Set<Handshake> open)
      throws IOException {
    while (true) {
      SocketChannel ch;
      try {
        ch = server.accept();
      } catch (IOException e) {
        LOG.warn("accepting a verbs authentication connection failed: {}", e.toString());
        accepting.interestOps(0); // e.g. out of file descriptors: do not spin
        return;
      }
      if (ch == null) {
        return;
      }
      InetAddress peer;
      try {
        peer = ((InetSocketAddress) ch.getRemoteAddress()).getAddress();
      } catch (IOException e) {
        LOG.debug("dropped a verbs authentication connection: {}", e.toString());
        ch.close(); // the peer is gone already: only this connection
        continue;
      }
      if (open.size() >= MAX_HANDSHAKES) {
        // Deadlines are accept time plus one timeout: their order is the accept order.
        end(HandshakeEviction.victim(open, peer, h -> h.peer, h -> h.deadlineNanos), open);
      }
      try {
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        SelectionKey key = ch.register(selector, SelectionKey.OP_READ);
        Handshake h =
            new Handshake(
                ch, key, peer, clock.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ioTimeoutMs));
        key.attach(h);
        open.add(h);
      } catch (IOException e) { // the peer is gone already: only this connection
        LOG.debug("dropped a verbs authentication connection: {}", e.toString());
        ch.close();
      }
    }
  }

  private void read(Handshake h) throws IOException {
    if (h.out != null) {
      return; // a message is being answered: the next one waits
    }
    if (h.channel.read(h.in) < 0) {
      throw new IOException("peer closed mid-handshake");
    }
    if (h.in.hasRemaining()) {
      return;
    }
    if (h.hello == null) {
      h.hello = h.in.array();
      h.out = ByteBuffer.wrap(onHello(h));
      h.in = ByteBuffer.allocate(AUTH_SIZE);
    } else {
      h.out = ByteBuffer.wrap(onAuth(h, h.in.array()));
      h.last = true;
    }
    h.key.interestOps(SelectionKey.OP_WRITE);
  }

  private void write(Handshake h, Set<Handshake> open) throws IOException {
    h.channel.write(h.out);
    if (h.out.hasRemaining()) {
      return;
    }
    if (h.last) {
      end(h, open);
      return;
    }
    h.out = null;
    h.key.interestOps(SelectionKey.OP_READ);
  }

  private static void end(Handshake h, Set<Handshake> open) {
    open.remove(h);
    h.key.cancel();
    try {
      h.channel.close();
    } catch (IOException ignored) {
      // closing
    }
  }

  /**
   * The CHALLENGE answering a HELLO; a bad version's is the last message, and so is an open one,
   * sent with the WELCOME behind it.
   */
  private byte[] onHello(Handshake h) {
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
  private byte[] onAuth(Handshake h, byte[] auth) {
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

  @Override
  public void close() {
    closed = true;
    selector.wakeup();
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing
    }
    try {
      selector.close();
    } catch (IOException ignored) {
      // closing
    }
    admitted.clear();
    if (secret != null) {
      Arrays.fill(secret, (byte) 0);
    }
  }
}
