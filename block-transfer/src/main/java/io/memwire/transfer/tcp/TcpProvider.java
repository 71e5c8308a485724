package io.memwire.transfer.tcp;

import io.memwire.transfer.Lifecycle;
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
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.util.LinkedHashMap;
import java.util.List;
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
 * regions, without calling application code. Two fixed sets of {@code ioThreads} I/O threads (event
 * loops) carry the node's connections: the serving loops its accepted connections (the responder,
 * and accepting), the reading loops its outgoing ones, so serving never waits behind received data
 * and each side's CPU is its own threads'.
 *
 * <p>Robustness: a failed {@code accept()} (out of file descriptors, say) pauses accepting with a
 * growing back-off and never closes the listener; at most {@code maxConnections} connections are
 * served and at most {@link SessionBooks#maxHandshakes} more may be in their handshake (so peers
 * that never authenticate cannot take authenticated peers' slots): a connection past the first
 * limit is told so and closed; one past the second evicts a handshake of the source address holding
 * the most (so peers that never authenticate push out only each other, never a handshake from an
 * address with fewer in progress: see {@link Acceptor}); served connections that stay idle past
 * {@code idleTimeout}, or whose peer takes no response bytes for {@code writeTimeout}, are closed.
 * Each condition is logged once when it starts and counted in {@link #counters()}.
 */
public final class TcpProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(TcpProvider.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  private final TransferConfig config;
  private final byte[] secret;

  /** File reads at least this long go out by sendfile; {@code Integer.MAX_VALUE}: never. */
  private final int sendfileMinBytes;

  private final RegionTable table = new RegionTable();
  private final EventLoop[] serveLoops;
  private final EventLoop[] readLoops;
  private final ServerSocketChannel server;
  private final InetSocketAddress localAddress;
  private final AtomicInteger nextServeLoop = new AtomicInteger();
  private final AtomicInteger nextReadLoop = new AtomicInteger();
  private final Set<TcpConnection> connections = ConcurrentHashMap.newKeySet();
  final LongAdder servedReads = new LongAdder();
  final LongAdder servedBytes = new LongAdder();
  final LongAdder sendfileReads = new LongAdder();
  final LongAdder servedErrors = new LongAdder();
  final LongAdder protocolViolations = new LongAdder();
  final LongAdder authFailures = new LongAdder();
  final LongAdder acceptFailures = new LongAdder();
  final LongAdder connectionsRefused = new LongAdder();
  final LongAdder handshakesEvicted = new LongAdder();
  final LongAdder idleClosed = new LongAdder();
  final LongAdder writeTimeouts = new LongAdder();
  final LongAdder loopErrors = new LongAdder();

  /** The accepted sessions, those in their handshake, and the serving slots taken. */
  private final SessionBooks sessions;

  /** Whether the first idle close / write timeout / violation / auth failure was logged. */
  final AtomicBoolean idleLogged = new AtomicBoolean();

  final AtomicBoolean writeTimeoutLogged = new AtomicBoolean();
  final AtomicBoolean violationLogged = new AtomicBoolean();
  final AtomicBoolean authFailureLogged = new AtomicBoolean();

  private final Lifecycle lifecycle = new Lifecycle();

  /** Sees each response's bytes on the reading side (tests only; none in production). */
  final LandedBytes landed;

  private TcpProvider(TransferConfig config, LandedBytes landed) throws IOException {
    this.config = config;
    this.landed = landed;
    this.sessions = new SessionBooks(config, connectionsRefused);
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
    // Thread names keep the role within the 15 characters Linux shows (/proc/PID/task/TID/comm).
    EventLoop[] serve = null;
    try {
      serve = startLoops("memwire-tcp-serve-" + id + "-", config.ioThreads());
      this.readLoops = startLoops("memwire-tcp-read-" + id + "-", config.ioThreads());
    } catch (IOException | RuntimeException e) {
      stopLoops(serve);
      server.close();
      throw e;
    }
    this.serveLoops = serve;
    serveLoops[0].execute(
        () -> {
          if (isClosed()) {
            return;
          }
          Acceptor acceptor = new Acceptor(this, server, localAddress);
          try {
            acceptor.key = serveLoops[0].register(server, SelectionKey.OP_ACCEPT, acceptor);
          } catch (IOException e) {
            LOG.error("cannot accept connections on {}", localAddress, e);
          }
        });
  }

  /** Starts {@code n} loops, or none: those started are stopped when one cannot be. */
  private EventLoop[] startLoops(String name, int n) throws IOException {
    EventLoop[] loops = new EventLoop[n];
    try {
      for (int i = 0; i < n; i++) {
        loops[i] = new EventLoop(name + i, loopErrors);
        loops[i].start();
      }
    } catch (IOException | RuntimeException e) {
      stopLoops(loops);
      throw e;
    }
    return loops;
  }

  private static void stopLoops(EventLoop[] loops) {
    if (loops == null) {
      return;
    }
    for (EventLoop l : loops) {
      if (l != null) {
        l.shutdown();
      }
    }
  }

  /**
   * Binds the responder and starts the I/O threads.
   *
   * @throws TransferConfigException when the address cannot be bound
   */
  public static TcpProvider open(TransferConfig config) {
    return open(config, LandedBytes.NONE);
  }

  /**
   * As {@link #open(TransferConfig)}, with {@code landed} seeing each response's bytes as they land
   * on the reading side (a test's transfer faults).
   */
  public static TcpProvider open(TransferConfig config, LandedBytes landed) {
    try {
      return new TcpProvider(config, landed);
    } catch (IOException e) {
      throw new TransferConfigException("cannot start the tcp provider: " + e.getMessage(), e);
    }
  }

  /** True from the start of {@link #close}. */
  boolean isClosed() {
    return !lifecycle.isOpen();
  }

  /** The books of accepted sessions: in their handshake, serving slots. */
  SessionBooks sessions() {
    return sessions;
  }

  /** The serving loop for the next accepted connection. */
  EventLoop pickServeLoop() {
    return serveLoops[Math.floorMod(nextServeLoop.getAndIncrement(), serveLoops.length)];
  }

  private EventLoop pickReadLoop() {
    return readLoops[Math.floorMod(nextReadLoop.getAndIncrement(), readLoops.length)];
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
    if (isClosed()) {
      throw new IllegalStateException("tcp provider is closed");
    }
    // Registering may allocate and pin; the I/O threads must stay free to serve the sockets.
    assert !onIoThread() : "memory registered on the I/O thread " + Thread.currentThread();
    return table.register(buffer, address, remoteReadable, file, fileOffset);
  }

  private boolean onIoThread() {
    for (EventLoop[] loops : List.of(serveLoops, readLoops)) {
      for (EventLoop l : loops) {
        if (l.inLoop()) {
          return true;
        }
      }
    }
    return false;
  }

  @Override
  public ProviderConnection connect(InetSocketAddress peer) throws TransferException {
    if (isClosed()) {
      throw new IllegalStateException("tcp provider is closed");
    }
    TcpConnection c = TcpConnection.open(this, peer, pickReadLoop());
    connections.add(c);
    return c;
  }

  @Override
  public Map<Metric, Long> counters() {
    Map<Metric, Long> m = new LinkedHashMap<>();
    m.put(TransportMetrics.SERVED_READS, servedReads.sum());
    m.put(TransportMetrics.SERVED_BYTES, servedBytes.sum());
    m.put(TransportMetrics.SENDFILE_READS, sendfileReads.sum());
    m.put(TransportMetrics.SERVED_ERRORS, servedErrors.sum());
    m.put(TransportMetrics.PROTOCOL_VIOLATIONS, protocolViolations.sum());
    m.put(TransportMetrics.AUTH_FAILURES, authFailures.sum());
    m.put(TransportMetrics.ACCEPT_FAILURES, acceptFailures.sum());
    m.put(TransportMetrics.CONNECTIONS_REFUSED, connectionsRefused.sum());
    m.put(TransportMetrics.HANDSHAKES_EVICTED, handshakesEvicted.sum());
    m.put(TransportMetrics.IDLE_CLOSED, idleClosed.sum());
    m.put(TransportMetrics.WRITE_TIMEOUTS, writeTimeouts.sum());
    m.put(TransportMetrics.LOOP_ERRORS, loopErrors.sum());
    m.put(TransportMetrics.SERVING_SESSIONS, (long) sessions.sessionCount());
    m.put(TransportMetrics.LIVE_REMOTE_KEYS, (long) table.size());
    return m;
  }

  @Override
  public void close() {
    if (!lifecycle.beginClose()) {
      return; // closed, or being closed by another thread
    }
    try {
      closeBody();
    } finally {
      lifecycle.closed();
    }
  }

  private void closeBody() {
    try {
      server.close();
    } catch (IOException e) {
      LOG.debug("close server", e);
    }
    stopLoops(serveLoops);
    stopLoops(readLoops);
    LOG.debug("tcp provider on {} stopped", localAddress);
  }
}
