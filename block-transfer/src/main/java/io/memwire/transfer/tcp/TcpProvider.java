package io.memwire.transfer.tcp;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferException;
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
import java.nio.channels.SocketChannel;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One-sided reads emulated over TCP, the way a software RDMA NIC would do them: the serving node
 * runs a responder that answers (key, address, length) requests from its table of live registered
 * regions, without calling application code. A fixed set of I/O threads (event loops) carries all
 * connections of the node, serving and reading alike.
 */
public final class TcpProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(TcpProvider.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  private final TransferConfig config;
  private final byte[] secret;
  private final RegionTable table = new RegionTable();
  private final EventLoop[] loops;
  private final ServerSocketChannel server;
  private final InetSocketAddress localAddress;
  private final AtomicInteger nextLoop = new AtomicInteger();
  private final Set<ResponderSession> sessions = ConcurrentHashMap.newKeySet();
  private final Set<TcpConnection> connections = ConcurrentHashMap.newKeySet();
  final LongAdder servedReads = new LongAdder();
  final LongAdder servedBytes = new LongAdder();
  final LongAdder servedErrors = new LongAdder();
  final LongAdder protocolViolations = new LongAdder();
  final LongAdder authFailures = new LongAdder();
  private volatile boolean closed;

  private TcpProvider(TransferConfig config) throws IOException {
    this.config = config;
    this.secret = config.authSecret().orElse(null);
    InetAddress bind = config.resolveBindAddress();
    int id = IDS.incrementAndGet();
    this.server = ServerSocketChannel.open();
    try {
      server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
      server.bind(new InetSocketAddress(bind, config.port()), 1024);
    } catch (IOException e) {
      server.close();
      throw new TransferConfigException("cannot listen on " + bind.getHostAddress() + ":"
          + config.port() + " (" + e.getMessage() + "); check bindAddress and port", e);
    }
    server.configureBlocking(false);
    this.localAddress = (InetSocketAddress) server.getLocalAddress();
    this.loops = new EventLoop[config.ioThreads()];
    for (int i = 0; i < loops.length; i++) {
      loops[i] = new EventLoop("memwire-tcp-" + id + "-io-" + i);
      loops[i].start();
    }
    loops[0].execute(() -> {
      if (closed) {
        return;
      }
      try {
        loops[0].register(server, SelectionKey.OP_ACCEPT, new Acceptor());
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

  /** Accepts connections and spreads them over the loops. */
  private final class Acceptor implements EventLoop.Handler {
    @Override
    public void ready(SelectionKey key) throws IOException {
      SocketChannel ch;
      while ((ch = server.accept()) != null) {
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        ResponderSession s = new ResponderSession(TcpProvider.this, ch);
        sessions.add(s);
        EventLoop loop = pickLoop();
        SocketChannel accepted = ch;
        loop.execute(() -> {
          try {
            s.attach(loop.register(accepted, SelectionKey.OP_READ, s));
          } catch (IOException e) {
            s.closeOnLoop(e);
          }
        });
      }
    }

    @Override
    public void closeOnLoop(Exception cause) {
      try {
        server.close();
      } catch (IOException e) {
        LOG.debug("close server", e);
      }
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

  RegionTable table() {
    return table;
  }

  long handshakeTimeoutNanos() {
    return config.connectTimeout().toNanos();
  }

  void sessionClosed(ResponderSession s) {
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
    return table.register(buffer, address, remoteReadable, file, fileOffset);
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
  public Map<String, Long> counters() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("servedReads", servedReads.sum());
    m.put("servedBytes", servedBytes.sum());
    m.put("servedErrors", servedErrors.sum());
    m.put("protocolViolations", protocolViolations.sum());
    m.put("authFailures", authFailures.sum());
    m.put("servingSessions", (long) sessions.size());
    m.put("liveRemoteKeys", (long) table.size());
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
