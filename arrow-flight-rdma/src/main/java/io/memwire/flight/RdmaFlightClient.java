package io.memwire.flight;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.flight.memory.ArenaMemory;
import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.transfer.Lifecycle;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads Flight streams through the RDMA data plane of an {@link RdmaFlightProducer}, or through
 * plain DoGet when that is not possible. Wraps a normal {@link FlightClient} (gRPC stays the
 * control plane) and owns one transfer node per provider it used, started on first use.
 *
 * <pre>{@code
 * try (RdmaFlightClient rdma = RdmaFlightClient.builder(flightClient, allocator).build();
 *      RdmaFlightStream s = rdma.getStream(info.getEndpoints().get(0))) {
 *   while (s.next()) { use(s.getRoot()); }
 * }
 * }</pre>
 *
 * <p>Defaults come from system properties: {@value DataPlane#PROPERTY} (auto, verbs, tcp, grpc),
 * {@value #WINDOW_BATCHES_PROPERTY}, {@value #WINDOW_BYTES_PROPERTY}, declared in {@link
 * FlightSettings}; builder settings win. Other system properties directly under {@code
 * memwire.flight.} are refused when a client is built.
 */
public final class RdmaFlightClient implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaFlightClient.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  /**
   * System property: most batches leased to this client at once ({@link
   * FlightSettings#WINDOW_BATCHES}; the byte window bounds large batches). The default is deep
   * enough that one stream of 1 MiB batches keeps the transfer connection busy while FREEs and new
   * descriptors cross gRPC (with 8 it ran dry: lower ratios to DoGet in the benchmark, see
   * docs/FLIGHT.md).
   */
  public static final String WINDOW_BATCHES_PROPERTY = "memwire.flight.windowBatches";

  /** System property: most body bytes leased to this client at once (see FlightSettings). */
  public static final String WINDOW_BYTES_PROPERTY = "memwire.flight.windowBytes";

  private final FlightClient flight;
  private final BufferAllocator allocator;
  private final DataPlane dataPlane;
  private final int windowBatches;
  private final long windowBytes;
  private final TransferConfig transferConfig;
  private final Duration readTimeout;
  private final ExecutorService executor;
  private final ClientNodes nodes;
  private final ClientStats stats = new ClientStats();

  @GuardedBy("this")
  private boolean loggedRdma;

  private final Lifecycle lifecycle = new Lifecycle();

  /** Runs once, at the end of the close body (a construction parameter tests count with). */
  private final Runnable onClosed;

  /** Runs on a stream's pump thread before a batch's reads are posted (null: nothing). */
  final BeforeReads beforeReads;

  /** Called with each batch descriptor before its reads go out (tests delay reads with it). */
  interface BeforeReads {
    void run(io.memwire.flight.wire.ServerMessage batch) throws InterruptedException;
  }

  private RdmaFlightClient(Builder b) {
    this.flight = b.flight;
    this.allocator = b.allocator;
    this.onClosed = b.onClosed;
    this.beforeReads = b.beforeReads;
    Map<String, String> sys = FlightSettings.clientSystemProperties();
    FlightSettings.refuseUnknownClientKeys(sys);
    this.dataPlane =
        b.dataPlane != null
            ? b.dataPlane
            : FlightSettings.DATA_PLANE.valueIn(sys, FlightSettings.CLIENT_PREFIX);
    this.windowBatches =
        b.windowBatches > 0
            ? b.windowBatches
            : FlightSettings.WINDOW_BATCHES.valueIn(sys, FlightSettings.CLIENT_PREFIX);
    this.windowBytes =
        b.windowBytes > 0
            ? b.windowBytes
            : FlightSettings.WINDOW_BYTES.valueIn(sys, FlightSettings.CLIENT_PREFIX);
    this.transferConfig = b.transferConfig != null ? b.transferConfig : TransferConfig.defaults();
    this.nodes =
        new ClientNodes(transferConfig, b.arenaSize, Math.max(b.maxRegisteredBytes, b.arenaSize));
    this.readTimeout =
        b.readTimeout != null ? b.readTimeout : transferConfig.readTimeout().plusSeconds(5);
    int id = IDS.incrementAndGet();
    AtomicInteger n = new AtomicInteger();
    this.executor =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "memwire-flight-client-" + id + "-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /** Starts a builder; {@code allocator} holds the roots and bodies of the streams. */
  public static Builder builder(FlightClient flight, BufferAllocator allocator) {
    return new Builder(flight, allocator);
  }

  /** The data plane setting (auto, verbs, tcp, grpc). */
  public DataPlane dataPlane() {
    return dataPlane;
  }

  /** Reads an endpoint's ticket, over its RDMA location when it has one (see {@link DataPlane}). */
  public RdmaFlightStream getStream(FlightEndpoint endpoint, CallOption... options) {
    return open(new StreamTarget(endpoint.getTicket(), endpoint, options));
  }

  /**
   * Reads a ticket of the server this client's FlightClient talks to. Without an endpoint there is
   * no location to check: in auto mode the exchange is tried and DoGet taken if it fails.
   */
  public RdmaFlightStream getStream(Ticket ticket, CallOption... options) {
    return open(new StreamTarget(ticket, null, options));
  }

  private RdmaFlightStream open(StreamTarget t) {
    ensureOpen();
    if (dataPlane == DataPlane.GRPC) {
      stats.streamsGrpc.increment();
      return new RdmaFlightStream(this, t, openGrpc(t), DataPlane.GRPC, false, null, null);
    }
    boolean auto = dataPlane == DataPlane.AUTO;
    ProviderKind provider;
    Location location = null;
    if (t.endpoint != null) {
      location = LocationChoice.pick(dataPlane, t.endpoint);
      if (location == null) {
        String why = LocationChoice.noLocation(dataPlane);
        return fallBackOrFail(t, auto, FallbackReason.NO_LOCATION, why, null);
      }
      provider = RdmaLocations.providerOf(location);
    } else {
      provider = LocationChoice.withoutLocation(dataPlane, transferConfig);
    }
    TransferNode node;
    ArenaMemory memory;
    try {
      node = nodes.node(provider);
      memory = nodes.memory(node.provider());
      if (location != null) {
        InetSocketAddress peer = RdmaLocations.addressOf(location);
        node.connection(peer); // proves the transport reaches the server; cached for the reads
      }
    } catch (TransferException | RuntimeException e) {
      String why = "the " + provider + " transport is unavailable: " + e.getMessage();
      return fallBackOrFail(t, auto, FallbackReason.TRANSPORT, why, e);
    }
    ExchangeRequest req =
        new ExchangeRequest(node.provider(), windowBatches, windowBytes, t.ticket.getBytes());
    FlightClient.ExchangeReaderWriter rw =
        flight.doExchange(FlightDescriptor.command(req.toBytes()), t.options);
    RdmaSource source = new RdmaSource(this, node, memory, rw);
    DataPlane used =
        node.provider() == ProviderKind.VERBS
            ? DataPlane.VERBS
            : node.provider() == ProviderKind.UCX ? DataPlane.UCX : DataPlane.TCP;
    logChoice(t, used);
    stats.streamsOneSided.increment();
    return new RdmaFlightStream(this, t, source, used, auto, null, null);
  }

  private synchronized void logChoice(StreamTarget t, DataPlane used) {
    if (!loggedRdma) {
      loggedRdma = true;
      LOG.info(
          "Flight data plane for {}: {} one-sided reads (window {} batches / {} bytes)",
          t,
          used,
          windowBatches,
          windowBytes);
    } else {
      LOG.debug("Flight data plane for {}: {}", t, used);
    }
  }

  private RdmaFlightStream fallBackOrFail(
      StreamTarget t, boolean auto, FallbackReason reason, String why, Throwable cause) {
    if (!auto) {
      throw reason.error(
          CallStatus.UNAVAILABLE, "data plane " + dataPlane + " requested but " + why, cause);
    }
    LOG.info("Flight data plane for {}: grpc DoGet ({})", t, why);
    stats.fellBack(reason);
    stats.streamsGrpc.increment();
    return new RdmaFlightStream(this, t, openGrpc(t), DataPlane.GRPC, false, reason, why);
  }

  /**
   * Counters keyed by the names declared in {@link FlightStatsMetrics#CLIENT}: streams one-sided
   * and through DoGet, batches and body bytes pulled, bodies verified and mismatched, stale batches
   * dropped, and fallbacks to DoGet in all and per {@link FallbackReason} ({@code
   * fallbacks.transport}, ...).
   */
  public Map<String, Long> stats() {
    return stats.snapshot();
  }

  ClientStats clientStats() {
    return stats;
  }

  StreamSource openGrpc(StreamTarget t) {
    return new GrpcSource(flight.getStream(t.ticket, t.options));
  }

  BufferAllocator allocator() {
    return allocator;
  }

  Duration readTimeout() {
    return readTimeout;
  }

  int windowBatches() {
    return windowBatches;
  }

  long windowBytes() {
    return windowBytes;
  }

  ExecutorService executor() {
    return executor;
  }

  private void ensureOpen() {
    if (!lifecycle.isOpen()) {
      throw new IllegalStateException("RdmaFlightClient is closed");
    }
  }

  /**
   * Stops the transfer nodes this client started and its threads. Close streams first. The wrapped
   * FlightClient is the caller's and stays open. Idempotent and safe from any thread: one caller
   * runs it, concurrent callers return once it has finished.
   */
  @Override
  public void close() {
    if (!lifecycle.beginClose()) {
      lifecycle.awaitClosed();
      return;
    }
    try {
      executor.shutdown();
      try {
        if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
          executor.shutdownNow();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      nodes.close();
      onClosed.run();
    } finally {
      lifecycle.closed();
    }
  }

  /** Prefix of the client's transfer-node keys in a properties file. */
  public static final String TRANSFER_PREFIX = "memwire.flight.transfer.";

  /** Options of an {@link RdmaFlightClient}. */
  public static final class Builder {
    private final FlightClient flight;
    private final BufferAllocator allocator;
    private DataPlane dataPlane;
    private int windowBatches;
    private long windowBytes;
    private TransferConfig transferConfig;
    private long arenaSize = 64L << 20;
    private long maxRegisteredBytes = 1L << 30;
    private Duration readTimeout;

    /** Test seam: runs once, at the end of the close body (tests count closes with it). */
    Runnable onClosed = () -> {};

    /** Test seam: runs before each batch's reads are posted (tests hold reads back with it). */
    BeforeReads beforeReads;

    private Builder(FlightClient flight, BufferAllocator allocator) {
      this.flight = Objects.requireNonNull(flight, "flight client");
      this.allocator = Objects.requireNonNull(allocator, "allocator");
    }

    /**
     * Applies {@code memwire.flight.dataPlane}, {@code memwire.flight.windowBatches}, {@code
     * memwire.flight.windowBytes} and the transfer keys under {@code memwire.flight.transfer.} (see
     * TransferConfig.KEYS) from a properties file such as conf-templates/flight/client-*. Other
     * keys directly under {@code memwire.flight.} are refused.
     *
     * @throws IllegalArgumentException naming the key of a bad or unknown value
     */
    public Builder properties(Map<String, String> p) {
      FlightSettings.refuseUnknownClientKeys(p);
      String pre = FlightSettings.CLIENT_PREFIX;
      DataPlane d = FlightSettings.given(p, pre, FlightSettings.DATA_PLANE, null);
      if (d != null) {
        dataPlane(d);
      }
      if (p.containsKey(WINDOW_BATCHES_PROPERTY) || p.containsKey(WINDOW_BYTES_PROPERTY)) {
        window(
            FlightSettings.WINDOW_BATCHES.valueIn(p, pre),
            FlightSettings.WINDOW_BYTES.valueIn(p, pre));
      }
      if (p.keySet().stream().anyMatch(k -> k.startsWith(TRANSFER_PREFIX))) {
        transferConfig(TransferConfig.fromProperties(p, TRANSFER_PREFIX));
      }
      return this;
    }

    /** auto (default), verbs, tcp or grpc. */
    public Builder dataPlane(DataPlane d) {
      this.dataPlane = Objects.requireNonNull(d, "dataPlane");
      return this;
    }

    /** Credit window: most batches and body bytes the server keeps leased for one stream. */
    public Builder window(int batches, long bytes) {
      if (batches < 1 || bytes < 1) {
        throw new IllegalArgumentException(
            "window must allow one batch and one byte: " + batches + ", " + bytes);
      }
      this.windowBatches = batches;
      this.windowBytes = bytes;
      return this;
    }

    /** Settings of the client's transfer nodes (the provider is set per location). */
    public Builder transferConfig(TransferConfig c) {
      this.transferConfig = Objects.requireNonNull(c, "transferConfig");
      return this;
    }

    /** Registered arena size for bodies (default 64 MiB) and the most all arenas take (1 GiB). */
    public Builder registeredMemory(long arenaSize, long maxBytes) {
      this.arenaSize = arenaSize;
      this.maxRegisteredBytes = maxBytes;
      return this;
    }

    /** How long to wait for one batch's reads (default: the transfer read timeout + 5 s). */
    public Builder readTimeout(Duration d) {
      this.readTimeout = Objects.requireNonNull(d, "readTimeout");
      return this;
    }

    public RdmaFlightClient build() {
      return new RdmaFlightClient(this);
    }
  }
}
