package io.memwire.transfer;

import io.memwire.transfer.memory.RegisteredAllocator;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local end of Memwire's transport: owns one provider (verbs or tcp), listens on the configured
 * address, registers memory for peers to read, and opens cached connections to peers.
 *
 * <pre>{@code
 * try (TransferNode node = TransferNode.start(TransferConfig.defaults())) {
 *   MemoryRegion region = node.register(file, 0, Files.size(file));
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
public final class TransferNode implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TransferNode.class);

  /** Name of the read pool's child allocator. */
  public static final String READ_POOL = "read-pool";

  private final TransferConfig config;
  private final TransportProvider provider;
  private final String selectionReason;
  private final Counters counters = new Counters();
  private final RegisteredAllocator memory;
  private final BufferPool pool;
  private final Set<MemoryRegion> regions = ConcurrentHashMap.newKeySet();
  private final ConnectionPool connections;
  private volatile boolean closed;

  private TransferNode(TransferConfig config, TransportProvider provider, String reason) {
    this.config = config;
    this.provider = provider;
    this.selectionReason = reason;
    this.memory =
        RegisteredAllocator.root(
            "node@"
                + provider.localAddress().getHostString()
                + ":"
                + provider.localAddress().getPort());
    this.pool =
        new BufferPool(
            new BufferPool.Registrar() {
              @Override
              public ProviderRegistration register(ByteBuffer buffer, long address) {
                reserve(buffer.capacity());
                try {
                  return provider.register(buffer, address, false, null, 0);
                } catch (RuntimeException e) {
                  counters.registeredBytes.addAndGet(-buffer.capacity());
                  throw e;
                }
              }

              @Override
              public void unregister(ProviderRegistration registration, int length) {
                counters.registeredBytes.addAndGet(-length);
              }
            },
            memory.newChild(READ_POOL),
            config.poolMaxBytes());
    this.connections = new ConnectionPool(this, provider, config, counters);
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
    TransferNode node = new TransferNode(config, chosen.provider(), chosen.reason());
    LOG.info(
        "Memwire transfer node on {}: provider {} ({})",
        node.localAddress(),
        chosen.provider().kind(),
        chosen.reason());
    return node;
  }

  /**
   * Starts a node on a provider built by the caller, without selection. A test hook (the test jar's
   * in-memory provider uses it); applications use {@link #start}.
   */
  static TransferNode startWith(TransferConfig config, TransportProvider provider, String reason) {
    return new TransferNode(config, provider, reason);
  }

  public TransferConfig config() {
    return config;
  }

  /** The provider in use: tcp or verbs. */
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

  /**
   * The root of this node's registered-memory books. Every consumer of registered memory takes a
   * named child ({@code newChild}) and hands out reference-counted units from it; the node closes
   * the root last, reporting any child or unit still live.
   */
  public RegisteredAllocator memory() {
    return memory;
  }

  Counters counters() {
    return counters;
  }

  /**
   * Registers the bytes between a direct buffer's position and limit for remote reads. The node
   * keeps a reference to the buffer until the region is closed.
   *
   * @throws RegistrationException for a heap buffer, an empty range, or when the registration
   *     budget is exhausted
   */
  public MemoryRegion register(ByteBuffer direct) {
    ensureOpen();
    if (!direct.isDirect()) {
      throw new RegistrationException(
          "only direct buffers can be registered, got a heap buffer of "
              + direct.remaining()
              + " bytes; allocate it with ByteBuffer.allocateDirect");
    }
    if (!direct.hasRemaining()) {
      throw new RegistrationException("cannot register an empty buffer");
    }
    ByteBuffer range = direct.slice();
    long base = MemoryAccess.address(direct) + direct.position();
    long length = range.remaining();
    reserve(length);
    List<MemoryRegion.Segment> segments = new ArrayList<>();
    try {
      for (long off = 0; off < length; off += config.maxSegmentSize()) {
        int n = (int) Math.min(config.maxSegmentSize(), length - off);
        ByteBuffer piece = range.duplicate().position((int) off).limit((int) off + n).slice();
        ProviderRegistration reg = provider.register(piece, base + off, true, null, 0);
        segments.add(new MemoryRegion.Segment(piece, base + off, reg, false));
      }
    } catch (RuntimeException e) {
      undo(segments, length);
      throw e;
    }
    return track(new MemoryRegion(this, segments, remoteOf(segments), null, null));
  }

  /**
   * Maps {@code [offset, offset + length)} of a file read-only and registers it for remote reads;
   * ranges over the maximum segment size become several segments.
   *
   * @throws IOException when the file cannot be opened or mapped
   * @throws IllegalArgumentException when the range is empty or outside the file
   * @throws RegistrationException when the registration budget is exhausted
   */
  public MemoryRegion register(Path file, long offset, long length) throws IOException {
    ensureOpen();
    if (offset < 0 || length <= 0) {
      throw new IllegalArgumentException(
          "file range must have offset >= 0 and length > 0: offset="
              + offset
              + " length="
              + length);
    }
    FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
    List<MemoryRegion.Segment> segments = new ArrayList<>();
    boolean reserved = false;
    try {
      long size = ch.size();
      if (offset > size - length) {
        throw new IllegalArgumentException(
            "range ["
                + offset
                + ", +"
                + length
                + ") lies outside "
                + file
                + " of "
                + size
                + " bytes");
      }
      reserve(length);
      reserved = true;
      for (long off = 0; off < length; off += config.maxSegmentSize()) {
        int n = (int) Math.min(config.maxSegmentSize(), length - off);
        MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_ONLY, offset + off, n);
        counters.mappedSegments.incrementAndGet();
        counters.mappedBytes.addAndGet(n);
        long address = MemoryAccess.address(map);
        ProviderRegistration reg;
        try {
          reg = provider.registerFile(map, address, file, ch, offset + off);
        } catch (RuntimeException e) {
          unmap(map);
          throw e;
        }
        segments.add(new MemoryRegion.Segment(map, address, reg, true));
      }
    } catch (IOException | RuntimeException e) {
      undo(segments, reserved ? length : 0);
      if (segments.isEmpty()) {
        ch.close();
      }
      throw e;
    }
    return track(new MemoryRegion(this, segments, remoteOf(segments), file, ch));
  }

  private RemoteRegion remoteOf(List<MemoryRegion.Segment> segments) {
    List<RegionDescriptor> ds = new ArrayList<>(segments.size());
    for (MemoryRegion.Segment s : segments) {
      // The provider's address, not the buffer's: a provider may serve a private pinned copy
      // (verbs on kernels that cannot pin read-only file mappings).
      ds.add(
          new RegionDescriptor(
              provider.kind(),
              localAddress(),
              s.registration.remoteKey(),
              s.registration.address(),
              s.registration.length()));
    }
    return new RemoteRegion(ds);
  }

  private MemoryRegion track(MemoryRegion r) {
    regions.add(r);
    counters.registeredRegions.incrementAndGet();
    LOG.debug("registered {}", r);
    return r;
  }

  private void undo(List<MemoryRegion.Segment> segments, long reservedBytes) {
    for (MemoryRegion.Segment s : segments) {
      s.registration.deregister(s.mapped ? () -> unmap(s.memory) : () -> {});
    }
    counters.registeredBytes.addAndGet(-reservedBytes);
  }

  private void reserve(long bytes) {
    long now;
    do {
      now = counters.registeredBytes.get();
      if (now + bytes > config.registrationBudget()) {
        throw new RegistrationException(
            "registration budget exhausted: "
                + now
                + " bytes registered + "
                + bytes
                + " requested > "
                + TransportSettings.REGISTRATION_BUDGET.name()
                + "="
                + config.registrationBudget()
                + "; raise the budget (and ulimit -l for verbs) or "
                + "close regions");
      }
    } while (!counters.registeredBytes.compareAndSet(now, now + bytes));
  }

  private void unmap(ByteBuffer mapping) {
    MemoryAccess.free(mapping);
    counters.mappedSegments.decrementAndGet();
    counters.mappedBytes.addAndGet(-mapping.capacity());
  }

  /** Called by {@link MemoryRegion#close()}. */
  void release(MemoryRegion region) {
    if (!regions.remove(region)) {
      return;
    }
    List<MemoryRegion.Segment> segs = region.segments();
    AtomicInteger left = new AtomicInteger(segs.size());
    for (MemoryRegion.Segment s : segs) {
      s.registration.deregister(
          () -> {
            if (s.mapped) {
              unmap(s.memory);
            }
            if (left.decrementAndGet() == 0) {
              if (region.channel() != null) {
                try {
                  region.channel().close();
                } catch (IOException e) {
                  LOG.debug("closing {} failed", region.file(), e);
                }
              }
              region.markReleased();
            }
          });
    }
    counters.registeredBytes.addAndGet(-region.length());
    counters.registeredRegions.decrementAndGet();
    LOG.debug("deregistered {}", region);
  }

  /**
   * The connection to {@code peer}, opened on first use and reused; a failed, closed or reaped one
   * is replaced. Blocks at most the connect timeout. After an attempt to open a connection failed,
   * attempts within {@link TransferConfig#peerBackoff()} fail at once, naming that failure. Handing
   * a connection out counts as using it: the idle reaper leaves it open for at least {@link
   * TransferConfig#connectionIdleTimeout()} after this returns, and while any read is on it. Take
   * it here for each batch rather than keeping it across idle periods (see {@link
   * ConnectionReapedException}).
   *
   * @throws TransferConnectionException when the peer cannot be reached, refuses, or is backed off
   *     after such a failure
   * @throws TransferTimeoutException when connecting takes longer than the connect timeout
   */
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

  /** Sweeps the idle reaper has finished (a test hook). */
  long reaperSweeps() {
    return connections.reaperSweeps();
  }

  /**
   * When the last finished reaper sweep began, {@link System#nanoTime}: every connection idle by
   * then has been closed (a test hook).
   */
  long lastReaperSweepStartNanos() {
    return connections.lastReaperSweepStartNanos();
  }

  /** The outgoing connections (a test hook). */
  ConnectionPool connectionPool() {
    return connections;
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
    m.put(TransportMetrics.REGISTERED_BYTES, counters.registeredBytes.get());
    m.put(TransportMetrics.MAPPED_SEGMENTS, counters.mappedSegments.get());
    m.put(TransportMetrics.MAPPED_BYTES, counters.mappedBytes.get());
    m.put(TransportMetrics.POOL_BUFFERS_OUTSTANDING, pool.outstandingBuffers());
    m.put(TransportMetrics.POOL_BYTES_OUTSTANDING, pool.outstandingBytes());
    m.put(TransportMetrics.POOL_SLAB_BYTES, pool.slabBytes());
    m.put(TransportMetrics.MEMORY_BYTES, memory.allocatedBytes());
    m.put(TransportMetrics.MEMORY_PEAK_BYTES, memory.peakBytes());
    m.put(TransportMetrics.MEMORY_UNITS, memory.liveUnits());
    for (RegisteredAllocator child : memory.children()) {
      String name = child.name();
      m.merge(TransportMetrics.MEMORY_CHILD_BYTES.of(name), child.allocatedBytes(), Long::sum);
      m.merge(TransportMetrics.MEMORY_CHILD_PEAK_BYTES.of(name), child.peakBytes(), Math::max);
      m.merge(TransportMetrics.MEMORY_CHILD_UNITS.of(name), child.liveUnits(), Long::sum);
    }
    m.put(TransportMetrics.OPEN_CONNECTIONS, connections.openConnections());
    m.putAll(provider.counters());
    return new TransferStats(m);
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("transfer node on " + localAddress() + " is closed");
    }
  }

  public boolean isClosed() {
    return closed;
  }

  /**
   * Closes every connection (outstanding reads fail), deregisters every region, unmaps every
   * mapping, frees the pool, stops the provider's threads and closes the registered-memory root
   * (leaks are logged and kept in {@code memory().leakReports()}). Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    connections.close();
    for (MemoryRegion r : new ArrayList<>(regions)) {
      r.close();
    }
    pool.close(); // read buffers callers did not release are reported as a leak of read-pool
    provider.close();
    // Last: consumers close their children before the node; what is still open is reported.
    memory.close();
    connections.awaitTimer();
    LOG.debug("transfer node on {} closed: {}", localAddress(), stats());
  }

  @Override
  public String toString() {
    return "TransferNode{" + provider.describe() + (closed ? ", closed" : "") + "}";
  }
}
