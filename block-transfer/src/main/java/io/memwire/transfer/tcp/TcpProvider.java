package io.memwire.transfer.tcp;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One-sided reads emulated over TCP, the way a software RDMA NIC would do them: the serving node
 * runs a responder that answers (key, address, length) requests from its table of live registered
 * regions, without calling application code. A fixed set of I/O threads (event loops) carries all
 * connections of the node, serving and reading alike.
 *
 * <p>Robustness: a failed {@code accept()} (out of file descriptors, say) pauses accepting with a
 * growing back-off and never closes the listener; at most {@code maxConnections} connections are
 * served and at most {@link #maxHandshakes} more may be in their handshake (so peers that never
 * authenticate cannot take authenticated peers' slots), further ones are told so and closed; served
 * connections that stay idle past {@code idleTimeout}, or whose peer takes no response bytes for
 * {@code writeTimeout}, are closed. Each condition is logged once when it starts and counted in
 * {@link #counters()}.
 */
public final class TcpProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(TcpProvider.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  /** Shortest and longest pause of accepting after {@code accept()} failed. */
  private static final long ACCEPT_BACKOFF_MIN_MS = 100;

  private static final long ACCEPT_BACKOFF_MAX_MS = 2_000;

  /** Connections taken per readiness event, so one flood does not starve the loop's others. */
  private static final int ACCEPTS_PER_EVENT = 256;

  private final TransferConfig config;
  private final byte[] secret;

  /** File reads at least this long go out by sendfile; {@code Integer.MAX_VALUE}: never. */
  private final int sendfileMinBytes;

  private final RegionTable table = new RegionTable();
  private final EventLoop[] loops;
  private final ServerSocketChannel server;
  private final InetSocketAddress localAddress;
  private final AtomicInteger nextLoop = new AtomicInteger();
  private final Set<ResponderSession> sessions = ConcurrentHashMap.newKeySet();

  /** Sessions past their handshake (authenticated when there is a secret). */
  private final AtomicInteger serving = new AtomicInteger();

  private final Set<TcpConnection> connections = ConcurrentHashMap.newKeySet();
  final LongAdder servedReads = new LongAdder();
  final LongAdder servedBytes = new LongAdder();
  final LongAdder servedErrors = new LongAdder();
  final LongAdder protocolViolations = new LongAdder();
  final LongAdder authFailures = new LongAdder();
  final LongAdder acceptFailures = new LongAdder();
  final LongAdder connectionsRefused = new LongAdder();
  final LongAdder idleClosed = new LongAdder();
  final LongAdder writeTimeouts = new LongAdder();
  final LongAdder loopErrors = new LongAdder();

  /** Whether the first idle close / write timeout / violation / auth failure was logged. */
  final AtomicBoolean idleLogged = new AtomicBoolean();

  final AtomicBoolean writeTimeoutLogged = new AtomicBoolean();
  final AtomicBoolean violationLogged = new AtomicBoolean();
  final AtomicBoolean authFailureLogged = new AtomicBoolean();
  private volatile boolean closed;

  private TcpProvider(TransferConfig config) throws IOException {
    this.config = config;
    this.secret = config.authSecret().orElse(null);
    this.sendfileMinBytes =
        TransportSettings.TCP_SENDFILE_MIN_BYTES
            .fromSystemProperties()
            .map(Math::toIntExact)
            .orElse(Integer.MAX_VALUE);
    InetAddress bind = config.resolveBindAddress();
    int id = IDS.incrementAndGet();
    this.server = ServerSocketChannel.open();
    try {
      server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
      server.bind(new InetSocketAddress(bind, config.port()), 1024);
    } catch (IOException e) {
      server.close();
      throw new TransferConfigException(
          "cannot listen on "
              + bind.getHostAddress()
              + ":"
              + config.port()
              + " ("
              + e.getMessage()
              + "); check bindAddress and port",
          e);
    }
    server.configureBlocking(false);
    this.localAddress = (InetSocketAddress) server.getLocalAddress();
    this.loops = new EventLoop[config.ioThreads()];
    for (int i = 0; i < loops.length; i++) {
      loops[i] = new EventLoop("memwire-tcp-" + id + "-io-" + i, loopErrors);
      loops[i].start();
    }
    loops[0].execute(
        () -> {
          if (closed) {
            return;
          }
          Acceptor acceptor = new Acceptor();
          try {
            acceptor.key = loops[0].register(server, SelectionKey.OP_ACCEPT, acceptor);
          } catch (IOException e) {
            LOG.error("cannot accept connections on {}", localAddress, e);
          }
        });
  }

  /**
   * Binds the responder and starts the I/O threads.
   *
   * @throws TransferConfigException when the address cannot be bound
   */
  public static TcpProvider open(TransferConfig config) {
    try {
      return new TcpProvider(config);
    } catch (IOException e) {
      throw new TransferConfigException("cannot start the tcp provider: " + e.getMessage(), e);
    }
  }

  /**
   * Accepts connections and spreads them over the loops. It never closes the listener on a failure:
   * a failed {@code accept()} pauses accepting (100 ms, doubling up to 2 s, resumed by the loop's
   * tick) and the next success resumes normal service.
   */
  private final class Acceptor implements EventLoop.Handler {
    SelectionKey key;
    private long pausedUntil;
    private boolean paused;
    private long backoffMs;
    private long failuresInRow;
    private boolean refusing;

    @Override
    public void ready(SelectionKey k) {
      for (int i = 0; i < ACCEPTS_PER_EVENT && !closed; i++) {
        SocketChannel ch;
        try {
          ch = server.accept();
        } catch (ClosedChannelException e) {
          return; // the provider is closing
        } catch (IOException | RuntimeException | Error e) {
          acceptFailed(k, e);
          return;
        }
        if (ch == null) {
          return;
        }
        if (failuresInRow > 0) {
          LOG.info(
              "accepting tcp transfer connections on {} again after {} failed accepts",
              localAddress,
              failuresInRow);
          failuresInRow = 0;
          backoffMs = 0;
        }
        admit(ch);
      }
    }

    private void acceptFailed(SelectionKey k, Throwable e) {
      acceptFailures.increment();
      failuresInRow++;
      backoffMs =
          backoffMs == 0 ? ACCEPT_BACKOFF_MIN_MS : Math.min(backoffMs * 2, ACCEPT_BACKOFF_MAX_MS);
      pausedUntil = System.nanoTime() + backoffMs * 1_000_000L;
      paused = true;
      if (k.isValid()) {
        k.interestOps(0);
      }
      if (failuresInRow == 1) {
        LOG.warn(
            "accept() failed on {} ({}); still listening, retrying with a back-off of up to "
                + "{} ms (failures are counted as acceptFailures)",
            localAddress,
            e.toString(),
            ACCEPT_BACKOFF_MAX_MS);
      } else {
        LOG.debug("accept() failed again on {}: {}", localAddress, e.toString());
      }
    }

    @Override
    public void tick(long nowNanos) {
      if (paused && nowNanos - pausedUntil >= 0) {
        paused = false;
        if (key != null && key.isValid()) {
          key.interestOps(SelectionKey.OP_ACCEPT);
        }
      }
    }

    private void admit(SocketChannel ch) {
      if (serving.get() >= config.maxConnections()) {
        refuse(ch, "connections");
        return;
      }
      if (sessions.size() - serving.get() >= maxHandshakes()) {
        refuse(ch, "connections still in their handshake");
        return;
      }
      if (refusing) {
        refusing = false;
        LOG.info(
            "serving fewer than {} connections on {} again; accepting",
            config.maxConnections(),
            localAddress);
      }
      ResponderSession s = null;
      try {
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        s = new ResponderSession(TcpProvider.this, ch);
        sessions.add(s);
        EventLoop loop = pickLoop();
        ResponderSession session = s;
        loop.execute(
            () -> {
              try {
                session.attach(loop.register(ch, SelectionKey.OP_READ, session));
              } catch (IOException | RuntimeException | Error e) {
                session.closeOnLoop(e instanceof Exception ? (Exception) e : new IOException(e));
              }
            });
      } catch (IOException | RuntimeException | Error e) {
        // Out of memory for the session, say: drop this connection only.
        loopErrors.increment();
        LOG.debug("dropped an accepted connection on {}: {}", localAddress, e.toString());
        if (s != null) {
          sessions.remove(s);
        }
        closeQuietly(ch);
      }
    }

    /** Tells the peer the node is at a connection limit, then closes. */
    private void refuse(SocketChannel ch, String what) {
      connectionsRefused.increment();
      if (!refusing) {
        refusing = true;
        LOG.warn(
            "serving {} connections on {}, {} still in their handshake: at the limit of {} ({} "
                + "and at most {} handshakes); refusing further ones until fewer are open "
                + "(counted as connectionsRefused)",
            serving.get(),
            localAddress,
            sessions.size() - serving.get(),
            what,
            TransferConfig.MAX_CONNECTIONS,
            maxHandshakes());
      }
      try {
        ch.configureBlocking(false);
        // Take the client's HELLO if it is already here, so the close is a FIN, not a reset
        // that could discard the answer before the client reads it.
        ch.read(ByteBuffer.allocate(Handshake.HELLO_SIZE));
        ch.write(
            Handshake.challenge(
                Handshake.STATUS_BUSY, false, new byte[Handshake.NONCE_SIZE], null));
      } catch (IOException | RuntimeException | Error e) {
        LOG.debug("refusing a connection on {}: {}", localAddress, e.toString());
      } finally {
        closeQuietly(ch);
      }
    }

    @Override
    public void closeOnLoop(Exception cause) {
      // Only at loop shutdown: ready() and tick() handle their own failures.
      try {
        server.close();
      } catch (IOException e) {
        LOG.debug("close server", e);
      }
    }
  }

  private static void closeQuietly(SocketChannel ch) {
    try {
      ch.close();
    } catch (IOException e) {
      LOG.debug("close", e);
    }
  }

  private EventLoop pickLoop() {
    return loops[Math.floorMod(nextLoop.getAndIncrement(), loops.length)];
  }

  TransferConfig config() {
    return config;
  }

  byte[] secret() {
    return secret;
  }

  /** Shortest file read served by sendfile ({@code memwire.tcp.sendfileMinBytes}). */
  int sendfileMinBytes() {
    return sendfileMinBytes;
  }

  RegionTable table() {
    return table;
  }

  long handshakeTimeoutNanos() {
    return config.connectTimeout().toNanos();
  }

  long idleTimeoutNanos() {
    return config.idleTimeout().toNanos();
  }

  long writeTimeoutNanos() {
    return config.writeTimeout().toNanos();
  }

  /**
   * Connections at once in their handshake: a small share of {@code maxConnections}, so peers that
   * never authenticate cannot take the slots of peers that do.
   */
  int maxHandshakes() {
    int max = config.maxConnections();
    return Math.min(max, Math.max(16, max / 16));
  }

  /** Takes a serving slot for a session whose handshake succeeded; false at the limit. */
  boolean admitServing() {
    while (true) {
      int n = serving.get();
      if (n >= config.maxConnections()) {
        connectionsRefused.increment();
        return false;
      }
      if (serving.compareAndSet(n, n + 1)) {
        return true;
      }
    }
  }

  void sessionClosed(ResponderSession s, boolean admitted) {
    if (admitted) {
      serving.decrementAndGet();
    }
    sessions.remove(s);
  }

  void connectionClosed(TcpConnection c) {
    connections.remove(c);
  }

  @Override
  public ProviderKind kind() {
    return ProviderKind.TCP;
  }

  @Override
  public InetSocketAddress localAddress() {
    return localAddress;
  }

  @Override
  public ProviderRegistration register(
      ByteBuffer buffer, long address, boolean remoteReadable, FileChannel file, long fileOffset) {
    if (closed) {
      throw new IllegalStateException("tcp provider is closed");
    }
    // Registering may allocate and pin; the I/O threads must stay free to serve the sockets.
    assert !onIoThread() : "memory registered on the I/O thread " + Thread.currentThread();
    return table.register(buffer, address, remoteReadable, file, fileOffset);
  }

  private boolean onIoThread() {
    for (EventLoop l : loops) {
      if (l.inLoop()) {
        return true;
      }
    }
    return false;
  }

  @Override
  public ProviderConnection connect(InetSocketAddress peer) throws TransferException {
    if (closed) {
      throw new IllegalStateException("tcp provider is closed");
    }
    TcpConnection c = TcpConnection.open(this, peer, pickLoop());
    connections.add(c);
    return c;
  }

  @Override
  public Map<Metric, Long> counters() {
    Map<Metric, Long> m = new LinkedHashMap<>();
    m.put(TransportMetrics.SERVED_READS, servedReads.sum());
    m.put(TransportMetrics.SERVED_BYTES, servedBytes.sum());
    m.put(TransportMetrics.SERVED_ERRORS, servedErrors.sum());
    m.put(TransportMetrics.PROTOCOL_VIOLATIONS, protocolViolations.sum());
    m.put(TransportMetrics.AUTH_FAILURES, authFailures.sum());
    m.put(TransportMetrics.ACCEPT_FAILURES, acceptFailures.sum());
    m.put(TransportMetrics.CONNECTIONS_REFUSED, connectionsRefused.sum());
    m.put(TransportMetrics.IDLE_CLOSED, idleClosed.sum());
    m.put(TransportMetrics.WRITE_TIMEOUTS, writeTimeouts.sum());
    m.put(TransportMetrics.LOOP_ERRORS, loopErrors.sum());
    m.put(TransportMetrics.SERVING_SESSIONS, (long) sessions.size());
    m.put(TransportMetrics.LIVE_REMOTE_KEYS, (long) table.size());
    return m;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      server.close();
    } catch (IOException e) {
      LOG.debug("close server", e);
    }
    for (EventLoop l : loops) {
      l.shutdown();
    }
    LOG.debug("tcp provider on {} stopped", localAddress);
  }
}
