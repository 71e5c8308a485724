package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvPd;
import io.memwire.transfer.Lifecycle;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One-sided reads over RDMA verbs through DiSNI: reliable-connected queue pairs set up by the RDMA
 * connection manager, memory registered with the NIC, and reads posted as {@code IBV_WR_RDMA_READ}
 * work requests that the serving NIC answers without its CPU.
 *
 * <p>Per node: one protection domain; completion queues sized from the device's {@code max_cqe},
 * each with its own thread, added as client queue pairs fill them and closed again as they empty
 * ({@link CompletionQueues}; served queue pairs sit on the first, which lives as long as the node);
 * one connection-manager thread (accepts peers on the server endpoint, which never touches data,
 * and watches client links for disconnects), and one connector thread that re-establishes a queue
 * pair after a remote access error. Client connections are opened lazily by {@link #connect}, each
 * on its own event channel driven by the calling thread with a deadline, because DiSNI's own
 * endpoint connect can wait forever on a route or address error. One more thread answers handshakes
 * on the node's TCP port ({@link HandshakePort}): with {@code authSecret} set they authenticate
 * peers, and only connect requests announced by a successful one get a queue pair; without it they
 * only tell a connecting peer this node's MTUs, so it refuses a path MTU this node cannot send in.
 *
 * <p>This class wires the parts and owns their lifecycle: {@link NodeResources} (what opens at
 * start), {@link VerbsRegistrar} (memory and file registration), {@link ClientQueuePairs} (opening
 * and retiring client queue pairs), {@link LinkTable} (which link belongs to which connection),
 * {@link VerbsAcceptor} (accepting and admitting peers), {@link HandshakePort} (the TCP handshake)
 * and {@link VerbsCounters}.
 */
public final class VerbsProvider implements TransportProvider {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  /**
   * How long the completion thread keeps polling an empty queue before it arms the channel and
   * sleeps, in microseconds (JVM system property; 0 = sleep at once). Spinning saves a wake-up per
   * completion when reads are in flight back to back, at the cost of CPU on that thread.
   */
  public static final String CQ_SPIN_PROPERTY = TransportSettings.VERBS_CQ_SPIN_MICROS.name();

  private final int id = IDS.incrementAndGet();
  private final TransferConfig config;
  private final VerbsProbe.Binding binding;
  private final DeviceLimits limits;
  private final int qpDepth;
  private final int cqEntries;
  private final IbvPd pd;
  private final CompletionQueues<CompletionThread> queues;
  private final InetSocketAddress localAddress;
  private final ExecutorService connector;
  private final VerbsCounters counters = new VerbsCounters();
  private final LinkTable links = new LinkTable();
  private final VerbsRegistrar registrar;
  private final ClientQueuePairs clientQueuePairs;
  private final VerbsAcceptor acceptor;
  private final boolean iwarp;

  /**
   * Serves the TCP handshake on the node's port: with a secret it checks peers before they may
   * connect; without one it only tells them this node's MTUs.
   */
  private final HandshakePort handshakePort;

  /** The provider's lifecycle: it only moves forward, by compare-and-set. */
  /** True from the start of {@link #close}. */
  private boolean isClosed() {
    return !lifecycle.isOpen();
  }

  private final Lifecycle lifecycle = new Lifecycle();

  private VerbsProvider(TransferConfig config, VerbsProbe.Binding binding) throws IOException {
    this.config = config;
    this.binding = binding;
    this.limits = DeviceLimits.query(binding.device().name());
    this.iwarp = binding.device().isIwarp();
    this.qpDepth = QueueSizing.qpDepth(limits, config);
    this.cqEntries =
        QueueSizing.cqEntries(
            TransportSettings.VERBS_CQ_ENTRIES.fromSystemProperties().orElse(null),
            limits.maxCqe,
            qpDepth);
    int maxQueues =
        QueueSizing.maxQueues(
            TransportSettings.VERBS_MAX_COMPLETION_QUEUES.fromSystemProperties().orElseThrow(),
            limits.maxCq);
    byte[] secret = config.authSecret().orElse(null);
    HandshakePort.refuseAuthOnIwarp(binding, iwarp, secret);
    NodeResources node =
        NodeResources.open(
            config,
            binding,
            secret != null,
            !iwarp && config.mtuHandshake(), // an iWARP device's RDMA CM owns the TCP port
            context -> newQueues(context, maxQueues));
    this.localAddress = node.localAddress;
    this.pd = node.pd;
    this.queues = node.queues;
    this.connector = newConnector();
    this.handshakePort = HandshakePort.open(config, binding, secret, node, localAddress, id);
    this.registrar =
        new VerbsRegistrar(
            pd, iwarp, binding.device().name(), counters, config.registrationBudget());
    this.clientQueuePairs =
        new ClientQueuePairs(
            config,
            binding,
            node.context,
            pd,
            queues,
            qpDepth,
            cqEntries,
            secret,
            links,
            counters,
            connector);
    this.acceptor =
        new VerbsAcceptor(
            node.serverChannel,
            node.listenId,
            localAddress,
            pd,
            queues,
            handshakePort.admissions(),
            links,
            counters,
            this::isClosed,
            "memwire-verbs-" + id + "-cm");
    acceptor.start();
    handshakePort.start();
    logStarted(node.port);
    io.memwire.transfer.fabric.FabricPath.log(binding.device(), binding.port(), binding.address());
    VerbsFabricKeys.log(config, binding);
  }

  /** The connector thread: reconnects, retirements and closing emptied completion queues. */
  private ExecutorService newConnector() {
    return Executors.newSingleThreadExecutor(
        r -> {
          Thread t = new Thread(r, "memwire-verbs-" + id + "-connector");
          t.setDaemon(true);
          return t;
        });
  }

  private void logStarted(int port) {
    handshakePort.logStarted(localAddress, port);
    LOG.info(
        "verbs provider on {} ({}, {}): {} reads in flight per queue pair; completion queues of "
            + "{} entries for {} queue pairs each, added as connections grow, at most {} ({}) "
            + "for {} outgoing connections; CQ spin {} us; device {}",
        localAddress,
        binding,
        iwarp ? "iWARP: read destinations registered with REMOTE_WRITE" : "InfiniBand/RoCE",
        qpDepth,
        cqEntries,
        queues.perQueue(),
        queues.maxQueues(),
        TransportSettings.VERBS_MAX_COMPLETION_QUEUES.name(),
        clientQueuePairs.connectionLimit(),
        cqSpinMicros(),
        limits);
  }

  /** The completion queues, each thread routing its completions through the link table. */
  private CompletionQueues<CompletionThread> newQueues(IbvContext context, int maxQueues) {
    int compVectors = QueueSizing.compVectors(context);
    long spinNanos = TimeUnit.MICROSECONDS.toNanos(cqSpinMicros());
    return new CompletionQueues<>(
        QueueSizing.queuePairsPerQueue(cqEntries, qpDepth),
        maxQueues,
        index ->
            new CompletionThread(
                context,
                cqEntries,
                index % compVectors,
                spinNanos,
                links::completed,
                "memwire-verbs-" + id + "-cq" + (index == 0 ? "" : "-" + index)),
        this::onConnector,
        counters::queueClosed);
  }

  private void onConnector(Runnable task) {
    connector.execute(task);
  }

  /**
   * Opens the provider: loads libdisni, resolves the bind address or device to an RDMA port,
   * listens for peers and starts the completion and connection-manager threads.
   *
   * @throws TransferConfigException when verbs cannot run with this configuration
   */
  public static TransportProvider open(TransferConfig config) {
    DisniLibrary.loadError()
        .ifPresent(
            why -> {
              throw new TransferConfigException(why);
            });
    VerbsProbe.Binding b = VerbsProbe.resolve(config, RdmaInventory.system());
    try {
      return new VerbsProvider(config, b);
    } catch (IOException e) {
      throw new TransferConfigException(
          "cannot start the verbs provider on " + b + ": " + e.getMessage(), e);
    }
  }

  static long cqSpinMicros() {
    return TransportSettings.VERBS_CQ_SPIN_MICROS.fromSystemProperties().orElseThrow();
  }

  @Override
  public ProviderKind kind() {
    return ProviderKind.VERBS;
  }

  @Override
  public InetSocketAddress localAddress() {
    return localAddress;
  }

  /**
   * Reads one queue pair may have outstanding: the device's {@code max_qp_rd_atom}, also capped by
   * {@code maxOutstandingRequests} and by {@code max_cqe}, so a queue pair's completions always fit
   * its place on a completion queue.
   */
  @Override
  public int maxReadsInFlightPerConnection() {
    return qpDepth;
  }

  @Override
  public ProviderRegistration register(
      ByteBuffer buffer, long address, boolean remoteReadable, FileChannel file, long fileOffset) {
    if (file != null && remoteReadable) {
      return registerFile(buffer, address, null, file, fileOffset);
    }
    ensureOpen();
    return registrar.register(buffer, address, remoteReadable);
  }

  /**
   * Registers a file region as its read-only mapping, or through a read-write shared mapping, or as
   * a private copy, whichever works first ({@link VerbsRegistrar#registerFile}); each way is
   * counted in {@link #counters()}.
   */
  @Override
  public ProviderRegistration registerFile(
      ByteBuffer mapping, long address, Path file, FileChannel channel, long fileOffset) {
    ensureOpen();
    return registrar.registerFile(mapping, address, file, fileOffset);
  }

  private void ensureOpen() {
    if (isClosed()) {
      throw new IllegalStateException("verbs provider is closed");
    }
  }

  @Override
  public ProviderConnection connect(InetSocketAddress peer) throws TransferException {
    if (isClosed()) {
      throw new IllegalStateException("verbs provider is closed");
    }
    QpLink link = clientQueuePairs.openLink(peer);
    VerbsConnection c = new VerbsConnection(clientQueuePairs, counters, peer, link);
    links.linkOpened(link, c);
    links.connectionOpened(c);
    if (isClosed()) {
      c.close();
      throw new TransferConnectionException("verbs provider closed", peer, null);
    }
    return c;
  }

  @Override
  public Map<Metric, Long> counters() {
    Map<Metric, Long> m = new LinkedHashMap<>();
    m.put(TransportMetrics.VERBS_CONNECTIONS, (long) links.connectionCount());
    m.put(TransportMetrics.VERBS_QUEUE_PAIRS, (long) links.linkCount());
    m.put(TransportMetrics.VERBS_ACCEPTED_PEERS, (long) acceptor.acceptedPeers());
    m.put(TransportMetrics.VERBS_ACCEPTED_TOTAL, counters.acceptedTotal());
    m.put(TransportMetrics.VERBS_REGISTRATIONS, (long) registrar.registrations());
    m.put(TransportMetrics.VERBS_REGISTERED_BYTES, registrar.registeredBytes());
    counters.putFileRegions(m);
    handshakePort.putCounters(m);
    counters.putReads(m);
    counters.putCompletions(m, queues);
    m.put(TransportMetrics.VERBS_CONNECTION_LIMIT, (long) clientQueuePairs.connectionLimit());
    m.put(TransportMetrics.VERBS_CONNECTIONS_REFUSED, counters.connectionsRefused());
    return m;
  }

  /** The binding in use (device, port, address). */
  public VerbsProbe.Binding binding() {
    return binding;
  }

  /**
   * Closes every connection (destroying its QP), stops accepting, destroys accepted QPs, stops the
   * threads, then frees the CQ, leftover registrations and the protection domain.
   */
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
    handshakePort.close();
    acceptor.awaitStopped();
    for (VerbsConnection c : links.connections()) {
      c.fail(new TransferConnectionException("verbs provider closed", c.peer(), null));
    }
    connector.shutdown();
    try {
      if (!connector.awaitTermination(
          config.connectTimeout().toMillis() + 5000, TimeUnit.MILLISECONDS)) {
        connector.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      connector.shutdownNow();
    }
    for (QpLink l : links.links()) {
      clientQueuePairs.retire(l);
    }
    acceptor.close();
    queues.close();
    int leftover = registrar.releaseAll();
    if (leftover > 0) {
      LOG.warn(
          "verbs provider on {} deregistered {} regions its node had not closed",
          localAddress,
          leftover);
    }
    CmSupport.deallocQuietly(pd);
    LOG.debug("verbs provider on {} stopped: {}", localAddress, counters());
  }

  @Override
  public String toString() {
    return "VerbsProvider{" + localAddress + ", " + binding + "}";
  }
}
