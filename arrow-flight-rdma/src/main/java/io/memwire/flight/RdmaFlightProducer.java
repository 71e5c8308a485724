package io.memwire.flight;

import io.memwire.flight.memory.ArenaMemory;
import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.transfer.Lifecycle;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferNode;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.arrow.flight.Action;
import org.apache.arrow.flight.ActionType;
import org.apache.arrow.flight.Criteria;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.PollInfo;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.Result;
import org.apache.arrow.flight.SchemaResult;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decorates any {@link FlightProducer} with an RDMA data plane. Every endpoint of its FlightInfo
 * gets an {@code rdma://} (verbs) or {@code rdma+tcp://} (tcp provider) location after its gRPC
 * one, so stock clients that take the first location are unaffected; an {@link RdmaFlightClient}
 * opens a DoExchange for the ticket instead and pulls each batch's body with one-sided reads. All
 * other calls, plain DoGet included, go to the wrapped producer unchanged.
 *
 * <p>Bodies are leased from {@link #memory()} (large arenas, not remotely readable); each lease
 * registers only its own bytes, under its own key (booked on the node's {@code flight-leases},
 * limit {@code maxRegisteredBytes}), and closes that region when it ends. A producer that reuses
 * its vectors after {@code putNext} (the usual case) gets a copy of each batch there; a producer
 * that calls {@code setUseZeroCopy(true)} and allocates its vectors from a root allocator built
 * with {@code memory().allocationManagerFactory()} is leased in place, without a copy.
 *
 * <p>The transfer node is the caller's and stays open on {@link #close()}.
 *
 * <p>Parts: {@code ServerResources} (what the exchanges share, taken from the options and released
 * once), {@code RdmaExchanges} (admits and runs the exchanges), {@code DecoratedInfos} (FlightInfo
 * answers with the data-plane location) and {@code FabricTrust} (whether the data plane may serve
 * over the node's provider).
 */
public final class RdmaFlightProducer implements FlightProducer, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaFlightProducer.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  private final FlightProducer delegate;
  private final Location rdmaLocation;
  private final ServerResources resources;
  private final RdmaExchanges exchanges;

  /** Answers with FlightInfo, decorated with the data-plane location when it is on. */
  private final DecoratedInfos infos;

  private final Lifecycle lifecycle = new Lifecycle();

  /** Runs once, at the end of the close body (a construction parameter tests count with). */
  private final Runnable onClosed;

  private RdmaFlightProducer(Builder b) {
    this.delegate = b.delegate;
    TransferNode node = b.node;
    this.rdmaLocation = RdmaLocations.of(node.provider(), node.localAddress());
    this.resources = ServerResources.open(b);
    String refusal =
        FabricTrust.refusal(
            b.policyProvider != null ? b.policyProvider : node.provider(), b.trustedFabric);
    this.infos =
        new DecoratedInfos(
            refusal != null ? null : new FlightInfoDecorator(rdmaLocation, b.grpcLocation));
    this.exchanges = new RdmaExchanges(resources, refusal, IDS.incrementAndGet());
    this.onClosed = b.onClosed;
    b.onOpened.accept(resources);
    if (refusal != null) {
      LOG.info("RDMA Flight data plane off: {}; clients get plain DoGet", refusal);
    } else {
      LOG.info(
          "RDMA Flight data plane at {} (compression {}, body checksum {}, lease timeout {} ms, "
              + "at most {} exchanges)",
          rdmaLocation,
          b.compression,
          b.bodyChecksum ? "CRC32C" : "off",
          b.leaseTimeout.toMillis(),
          b.maxExchanges);
    }
  }

  /**
   * Starts a builder.
   *
   * @param delegate the producer to decorate
   * @param node the transfer node bodies are registered with and read from (the caller's)
   * @param allocator parent of the small allocator for data-plane messages
   */
  public static Builder builder(
      FlightProducer delegate, TransferNode node, BufferAllocator allocator) {
    return new Builder(delegate, node, allocator);
  }

  /** The data-plane location added to every endpoint. */
  public Location rdmaLocation() {
    return rdmaLocation;
  }

  /**
   * The memory batches are leased from (each lease registers its own part of it). A zero-copy
   * producer allocates its vectors from a root allocator built with {@code
   * memory().allocationManagerFactory()}.
   */
  public ArenaMemory memory() {
    return resources.memory();
  }

  /**
   * Counters and current levels, keyed by the names declared in {@link FlightStatsMetrics#SERVER}
   * (sessions, batches copied or leased in place, body bytes, leases freed, expired or failed,
   * credit waits, leased and registered bytes; docs/FLIGHT.md lists them).
   */
  public Map<String, Long> stats() {
    Map<String, Long> m = resources.stats().snapshot();
    exchanges.putCurrent(m);
    m.put(FlightStatsMetrics.REGISTERED_BLOCKS.name(), resources.memory().outstandingBlocks());
    m.put(FlightStatsMetrics.REGISTERED_BLOCK_BYTES.name(), resources.memory().allocatedBytesNow());
    m.put(FlightStatsMetrics.LEASE_REGION_BYTES.name(), resources.leaseRegions().registeredBytes());
    m.put(FlightStatsMetrics.LEASE_GUARDS.name(), (long) resources.guards().liveRegions());
    return m;
  }

  // ---- FlightProducer ---------------------------------------------------------------------

  @Override
  public void doExchange(CallContext context, FlightStream reader, ServerStreamListener writer) {
    FlightDescriptor descriptor = reader.getDescriptor();
    if (descriptor == null
        || !descriptor.isCommand()
        || !ExchangeRequest.matches(descriptor.getCommand())) {
      delegate.doExchange(context, reader, writer);
      return;
    }
    exchanges.serve(context, descriptor.getCommand(), reader, writer);
  }

  @Override
  public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
    delegate.getStream(context, ticket, listener);
  }

  @Override
  public void listFlights(
      CallContext context, Criteria criteria, StreamListener<FlightInfo> listener) {
    delegate.listFlights(context, criteria, infos.listing(listener));
  }

  @Override
  public FlightInfo getFlightInfo(CallContext context, FlightDescriptor descriptor) {
    return infos.info(delegate.getFlightInfo(context, descriptor));
  }

  @Override
  public PollInfo pollFlightInfo(CallContext context, FlightDescriptor descriptor) {
    return infos.poll(delegate.pollFlightInfo(context, descriptor));
  }

  @Override
  public SchemaResult getSchema(CallContext context, FlightDescriptor descriptor) {
    return delegate.getSchema(context, descriptor);
  }

  @Override
  public Runnable acceptPut(
      CallContext context, FlightStream flightStream, StreamListener<PutResult> ackStream) {
    return delegate.acceptPut(context, flightStream, ackStream);
  }

  @Override
  public void doAction(CallContext context, Action action, StreamListener<Result> listener) {
    delegate.doAction(context, action, listener);
  }

  @Override
  public void listActions(CallContext context, StreamListener<ActionType> listener) {
    delegate.listActions(context, listener);
  }

  /**
   * Ends every exchange in progress (their leases are released), then closes the lease regions'
   * books (a region still on them is reported as a leak), frees the arenas and the message
   * allocator. The wrapped producer and the transfer node stay open. Idempotent and safe from any
   * thread: one caller runs it, concurrent callers return once it has finished.
   */
  @Override
  public void close() {
    if (!lifecycle.beginClose()) {
      lifecycle.awaitClosed();
      return;
    }
    try {
      exchanges.close();
      resources.close();
      onClosed.run();
    } finally {
      lifecycle.closed();
    }
  }

  /** Options of an {@link RdmaFlightProducer}. */
  public static final class Builder {
    // Package-private: ServerResources.open reads them.
    final FlightProducer delegate;
    final TransferNode node;
    final BufferAllocator allocator;
    Location grpcLocation;
    // Defaults as declared in FlightSettings.
    CompressionUtil.CodecType compression = FlightSettings.COMPRESSION.defaultValue();
    Duration leaseTimeout = FlightSettings.LEASE_TIMEOUT.defaultValue();
    int maxWindowBatches = FlightSettings.MAX_WINDOW_BATCHES.defaultValue();
    long maxWindowBytes = FlightSettings.MAX_WINDOW_BYTES.defaultValue();
    long arenaSize = FlightSettings.ARENA_SIZE.defaultValue();
    long maxRegisteredBytes = FlightSettings.MAX_REGISTERED_BYTES.defaultValue();
    int maxExchanges = FlightSettings.MAX_EXCHANGES.defaultValue();
    boolean trustedFabric = FlightSettings.TRUSTED_FABRIC.defaultValue();
    boolean bodyChecksum = FlightSettings.BODY_CHECKSUM.defaultValue();

    /** Test seam: sees each leased body once its checksum was taken (tests corrupt it). */
    LeaseBodies.Tap bodyTap;

    /** Test seam: the provider the trust policy is decided for (default: the node's). */
    ProviderKind policyProvider;

    /** Test seam: runs once, at the end of the close body (tests count closes with it). */
    Runnable onClosed = () -> {};

    /**
     * Test seam: sees what the exchanges share once it is opened, before the producer is returned
     * (tests check the settings and the lease books in it).
     */
    Consumer<ServerResources> onOpened = r -> {};

    private Builder(FlightProducer delegate, TransferNode node, BufferAllocator allocator) {
      this.delegate = Objects.requireNonNull(delegate, "delegate");
      this.node = Objects.requireNonNull(node, "node");
      this.allocator = Objects.requireNonNull(allocator, "allocator");
    }

    /**
     * Applies the {@code memwire.flight.server.*} keys of a properties file such as
     * conf-templates/flight/server.properties, as declared in {@link FlightSettings#SERVER}; keys
     * not given keep the builder's values. Unknown keys under the prefix are refused.
     *
     * @throws IllegalArgumentException naming the key of a bad value
     */
    public Builder properties(Map<String, String> p) {
      FlightSettings.refuseUnknownServerKeys(p);
      String pre = FlightSettings.SERVER_PREFIX;
      compression(FlightSettings.given(p, pre, FlightSettings.COMPRESSION, compression));
      leaseTimeout(FlightSettings.given(p, pre, FlightSettings.LEASE_TIMEOUT, leaseTimeout));
      int batches =
          FlightSettings.given(p, pre, FlightSettings.MAX_WINDOW_BATCHES, maxWindowBatches);
      long bytes = FlightSettings.given(p, pre, FlightSettings.MAX_WINDOW_BYTES, maxWindowBytes);
      long arena = FlightSettings.given(p, pre, FlightSettings.ARENA_SIZE, arenaSize);
      long max =
          FlightSettings.given(p, pre, FlightSettings.MAX_REGISTERED_BYTES, maxRegisteredBytes);
      maxExchanges(FlightSettings.given(p, pre, FlightSettings.MAX_EXCHANGES, maxExchanges));
      trustedFabric(FlightSettings.given(p, pre, FlightSettings.TRUSTED_FABRIC, trustedFabric));
      bodyChecksum(FlightSettings.given(p, pre, FlightSettings.BODY_CHECKSUM, bodyChecksum));
      maxWindow(batches, bytes);
      return registeredMemory(arena, max);
    }

    /**
     * Whether each leased body's CRC32C is sent with its descriptor for the client to check
     * (default off; {@link FlightSettings#BODY_CHECKSUM}).
     */
    public Builder bodyChecksum(boolean on) {
      this.bodyChecksum = on;
      return this;
    }

    /** The server's own gRPC location, put first on endpoints that list no location. */
    public Builder grpcLocation(Location l) {
      this.grpcLocation = l;
      return this;
    }

    /** Body compression on the data plane (LZ4_FRAME, ZSTD; default none). */
    public Builder compression(CompressionUtil.CodecType c) {
      this.compression = Objects.requireNonNull(c, "compression");
      return this;
    }

    /**
     * How long a batch stays leased without the client's FREE before the exchange fails (range of
     * {@link FlightSettings#LEASE_TIMEOUT}).
     */
    public Builder leaseTimeout(Duration d) {
      this.leaseTimeout = FlightSettings.LEASE_TIMEOUT.check(FlightSettings.SERVER_PREFIX, d);
      return this;
    }

    /** Caps on a client's credit window (the smaller of client's and these applies). */
    public Builder maxWindow(int batches, long bytes) {
      if (batches < 1 || bytes < 1) {
        throw new IllegalArgumentException(
            "maxWindow must allow one batch and one byte: " + batches + ", " + bytes);
      }
      this.maxWindowBatches = batches;
      this.maxWindowBytes = bytes;
      return this;
    }

    /** Registered arena size (default 64 MiB) and the most bytes all arenas take (1 GiB). */
    public Builder registeredMemory(long arenaSize, long maxBytes) {
      this.arenaSize = arenaSize;
      this.maxRegisteredBytes = maxBytes;
      return this;
    }

    /**
     * Most RDMA exchanges served at once (default 64); each holds a gRPC handler thread and one
     * pump thread. Past it a DoExchange is refused with RESOURCE_EXHAUSTED (an auto client takes
     * DoGet).
     */
    public Builder maxExchanges(int n) {
      this.maxExchanges = FlightSettings.MAX_EXCHANGES.check(FlightSettings.SERVER_PREFIX, n);
      return this;
    }

    /**
     * Whether every peer of the fabric is trusted (default false). With provider verbs the data
     * plane serves only when true: the hardware does not keep one connected client from reading
     * another's leased batch by guessing its rkey and address.
     */
    public Builder trustedFabric(boolean trusted) {
      this.trustedFabric = trusted;
      return this;
    }

    public RdmaFlightProducer build() {
      return new RdmaFlightProducer(this);
    }
  }
}
