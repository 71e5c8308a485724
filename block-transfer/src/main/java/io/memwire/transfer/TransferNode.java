package io.memwire.transfer;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import io.memwire.transfer.spi.TransportProvider;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local end of Memwire's transport: owns one provider (verbs or tcp), listens on the configured
 * address, registers memory for peers to read, and opens cached connections to peers.
 *
 * <pre>{@code
 * try (TransferNode node = TransferNode.start(TransferConfig.defaults())) {
 *   MemoryRegion region = node.register(file, 0, Files.size(file), node.memory());
 *   byte[] capability = region.remote().toBytes();       // send to the reader
 *   ...
 *   TransferBuffer b = reader.connection(remote.node()).read(ReadRequest.of(remote, 0, 4096)).get();
 *   b.release();
 * }
 * }</pre>
 *
 * <p>Outgoing connections are cached per peer by the node's {@link ConnectionPool}. With {@link
 * TransferConfig#connectionIdleTimeout()} set, the node's timer thread also closes connections that
 * had no read and were not handed out for that long (counted as {@code connectionsReaped}); see
 * {@link Connection} for why that never fails a read, and {@link ConnectionReapedException} for a
 * caller that kept a reaped connection.
 */
public final class TransferNode implements Registrar, Connector, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TransferNode.class);

  /** Name of the read pool's child allocator. */
  public static final String READ_POOL = "read-pool";

  private final TransferConfig config;
  private final TransportProvider provider;
  private final String selectionReason;
  private final Counters counters = new Counters();
  private final NodeMemory memory;
  private final BufferPool pool;
  private final ConnectionPool connections;

  private final Lifecycle lifecycle = new Lifecycle();

  /**
   * A node on {@code provider}; its timeouts are decided on {@code clock} and swept on {@code
   * timer} ({@link ConnectionPool#newTimer}). {@link #start} is the way in; tests in this package
   * and the test jar construct one on a provider and a clock of their own.
   */
  TransferNode(
      TransferConfig config,
      TransportProvider provider,
      String reason,
      NanoClock clock,
      ScheduledExecutorService timer) {
    this(config, provider, reason, clock, timer, ConnectionPool.SweepListener.NONE);
  }

  /**
   * As above, telling {@code sweeps} of each finished sweep of the idle reaper (tests wait for one
   * with it).
   */
  TransferNode(
      TransferConfig config,
      TransportProvider provider,
      String reason,
      NanoClock clock,
      ScheduledExecutorService timer,
      ConnectionPool.SweepListener sweeps) {
    this.config = config;
    this.provider = provider;
    this.selectionReason = reason;
    this.memory = new NodeMemory(config, provider, counters);
    this.pool = new BufferPool(memory, memory.root().newChild(READ_POOL), config.poolMaxBytes());
    this.connections = new ConnectionPool(this, provider, config, counters, clock, timer, sweeps);
  }

  /**
   * Starts a node: picks the provider ({@code auto} probes verbs and falls back to tcp, logging
   * why), binds and starts serving.
   *
   * @throws TransferConfigException when the configuration cannot work (for example {@code verbs}
   *     requested where none is usable, or the port is taken)
   */
  public static TransferNode start(TransferConfig config) {
    ProviderSelection.Result chosen = ProviderSelection.open(config);
    TransferNode node =
        new TransferNode(
            config,
            chosen.provider(),
            chosen.reason(),
            NanoClock.SYSTEM,
            ConnectionPool.newTimer());
    LOG.info(
        "Memwire transfer node on {}: provider {} ({})",
        node.localAddress(),
        chosen.provider().kind(),
        chosen.reason());
    return node;
  }

  public TransferConfig config() {
    return config;
  }

  @Override
  public ProviderKind provider() {
    return provider.kind();
  }

  /** Why this provider was chosen, as logged at start. */
  public String selectionReason() {
    return selectionReason;
  }

  /** Where peers reach this node. */
  public InetSocketAddress localAddress() {
    return provider.localAddress();
  }

  /** The pool read destinations come from. */
  public BufferPool bufferPool() {
    return pool;
  }

  @Override
  public MemoryAllocator memory() {
    return memory.root();
  }

  /** The node's registrations and their books. */
  NodeMemory registrations() {
    return memory;
  }

  Counters counters() {
    return counters;
  }

  @Override
  public MemoryRegion register(ByteBuffer direct, MemoryAllocator account, Runnable release) {
    try {
      ensureOpen();
    } catch (IllegalStateException e) {
      release.run();
      throw e;
    }
    return memory.register(direct, account, release);
  }

  @Override
  public MemoryRegion register(Path file, long offset, long length, MemoryAllocator account)
      throws IOException {
    ensureOpen();
    return memory.register(file, offset, length, account);
  }

  @Override
  public BufferUnit allocateRegistered(MemoryAllocator account, int size, String what) {
    ensureOpen();
    return memory.buffers().allocateRegistered(account, size, what);
  }

  @Override
  public BufferUnit allocateDirect(MemoryAllocator account, int size, String what) {
    ensureOpen();
    return memory.buffers().allocateDirect(account, size, what);
  }

  @Override
  public Connection connection(InetSocketAddress peer) throws TransferException {
    ensureOpen();
    return connections.get(peer);
  }

  /** Closes the cached connection to {@code peer}, if any; its outstanding reads fail. */
  public void disconnect(InetSocketAddress peer) {
    connections.disconnect(peer);
  }

  /** Called by a connection when a read arrived after the reaper retired it. */
  void readOnReapedConnection(Connection c) {
    connections.readOnReapedConnection(c);
  }

  /** A snapshot of the counters, keyed by {@link TransportMetrics}. */
  public TransferStats stats() {
    Map<Metric, Long> m = new LinkedHashMap<>();
    m.put(TransportMetrics.READS_COMPLETED, counters.readsCompleted.sum());
    m.put(TransportMetrics.BYTES_READ, counters.bytesRead.sum());
    m.put(TransportMetrics.REMOTE_ACCESS_ERRORS, counters.remoteAccessErrors.sum());
    m.put(TransportMetrics.CONNECTION_ERRORS, counters.connectionErrors.sum());
    m.put(TransportMetrics.TIMEOUTS, counters.timeouts.sum());
    m.put(TransportMetrics.CONNECT_FAILURES, counters.connectFailures.sum());
    m.put(TransportMetrics.PEER_BACKOFF_REJECTS, counters.peerBackoffRejects.sum());
    m.put(TransportMetrics.CONNECTIONS_REAPED, counters.connectionsReaped.sum());
    m.put(TransportMetrics.OUTSTANDING_REQUESTS, counters.outstandingRequests.get());
    m.put(TransportMetrics.REGISTERED_REGIONS, counters.registeredRegions.get());
    m.put(TransportMetrics.REGISTERED_BYTES, memory.root().registeredBytes());
    m.put(TransportMetrics.MAPPED_SEGMENTS, counters.mappedSegments.get());
    m.put(TransportMetrics.MAPPED_BYTES, counters.mappedBytes.get());
    m.put(TransportMetrics.POOL_BUFFERS_OUTSTANDING, pool.outstandingBuffers());
    m.put(TransportMetrics.POOL_BYTES_OUTSTANDING, pool.outstandingBytes());
    m.put(TransportMetrics.POOL_SLAB_BYTES, pool.slabBytes());
    MemoryAllocator root = memory.root();
    m.put(TransportMetrics.MEMORY_BYTES, root.allocatedBytes());
    m.put(TransportMetrics.MEMORY_PEAK_BYTES, root.peakBytes());
    m.put(TransportMetrics.MEMORY_UNITS, root.liveUnits());
    for (MemoryAllocator child : root.children()) {
      String name = child.name();
      m.merge(TransportMetrics.MEMORY_CHILD_BYTES.of(name), child.allocatedBytes(), Long::sum);
      m.merge(TransportMetrics.MEMORY_CHILD_PEAK_BYTES.of(name), child.peakBytes(), Math::max);
      m.merge(TransportMetrics.MEMORY_CHILD_UNITS.of(name), child.liveUnits(), Long::sum);
    }
    m.put(TransportMetrics.OPEN_CONNECTIONS, connections.openConnections());
    m.put(TransportMetrics.TRACKED_PEERS, (long) connections.peersTracked());
    m.putAll(provider.counters());
    return new TransferStats(m);
  }

  private void ensureOpen() {
    if (!lifecycle.isOpen()) {
      throw new IllegalStateException("transfer node on " + localAddress() + " is closed");
    }
  }

  /** True from the start of {@link #close}. */
  public boolean isClosed() {
    return !lifecycle.isOpen();
  }

  /**
   * Closes every connection (outstanding reads fail), deregisters every region, unmaps every
   * mapping, frees the pool, stops the provider's threads and closes the registered-memory root
   * (leaks are logged and kept in {@code memory().leakReports()}). Idempotent and safe from any
   * thread: the first caller runs it, later and concurrent ones return at once (they never wait, so
   * a close from a provider thread the first caller is stopping cannot deadlock).
   */
  @Override
  public void close() {
    if (!lifecycle.beginClose()) {
      return;
    }
    try {
      connections.close();
      memory.closeRegions();
      pool.close(); // read buffers callers did not release are reported as a leak of read-pool
      provider.close();
      // Last: consumers close their children before the node; what is still open is reported.
      memory.root().close();
      connections.awaitTimer();
    } finally {
      lifecycle.closed();
    }
    LOG.debug("transfer node on {} closed: {}", localAddress(), stats());
  }

  @Override
  public String toString() {
    Lifecycle.State s = lifecycle.state();
    return "TransferNode{"
        + provider.describe()
        + (s == Lifecycle.State.OPEN ? "" : ", " + s)
        + "}";
  }
}
