package io.memwire.transfer.verbs;

import static io.memwire.transfer.verbs.VerbsAuthWire.AUTH_SIZE;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.spi.HandshakeEviction;
import io.memwire.transfer.verbs.VerbsAuthExchange.Handshake;
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
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Set;
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
 * <p>This class is the serving side's TCP port (one selector thread: accepting, reading and writing
 * every handshake, deadlines, eviction); {@link VerbsAuthExchange} answers each message and keeps
 * the admissions; {@link VerbsAuthClient} is the connecting side and {@link VerbsAuthWire} has the
 * messages.
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

  /**
   * Most handshakes in progress at once; one more closes the oldest of the source address holding
   * the most.
   */
  static final int MAX_HANDSHAKES = 64;

  private static final long TICK_MS = 250;

  /** The protocol's answers and the admissions they grant. */
  private final VerbsAuthExchange exchange;

  private final ServerSocket socket;
  private final InetSocketAddress self;
  private final int ioTimeoutMs;
  private final NanoClock clock;
  private final Selector selector;
  private final Thread thread;

  // The exchange's counters, read by the provider's counters() and the tests.
  final LongAdder proofsAccepted;
  final LongAdder proofsRejected;
  final LongAdder requestsRefused;
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
    this.exchange = new VerbsAuthExchange(secret, mtu, self, admitNanos, clock);
    this.proofsAccepted = exchange.proofsAccepted;
    this.proofsRejected = exchange.proofsRejected;
    this.requestsRefused = exchange.requestsRefused;
    this.socket = socket;
    this.self = self;
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
    return exchange.admit(cmSource);
  }

  /** The node address handshakes must name. */
  InetSocketAddress address() {
    return self;
  }

  int pending() {
    return exchange.pending();
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
      h.out = ByteBuffer.wrap(exchange.onHello(h));
      h.in = ByteBuffer.allocate(AUTH_SIZE);
    } else {
      h.out = ByteBuffer.wrap(exchange.onAuth(h, h.in.array()));
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
    exchange.wipe();
  }
}
