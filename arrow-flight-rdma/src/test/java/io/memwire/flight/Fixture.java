package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.Location;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.compression.CompressionUtil;

/**
 * One plain Flight server and one wrapped (RDMA) server over the same {@link TestProducer}, a tcp
 * transfer node, and allocators whose emptiness {@link #close()} asserts.
 */
final class Fixture implements AutoCloseable {
  final RootAllocator root = new RootAllocator();
  final BufferAllocator serverAllocator = root.newChildAllocator("server", 0, Long.MAX_VALUE);
  final BufferAllocator clientAllocator = root.newChildAllocator("client", 0, Long.MAX_VALUE);
  final TestProducer producer = new TestProducer(serverAllocator);
  final TransferNode node;
  final FlightServer plainServer;
  final RdmaFlightProducer rdma;

  /** What {@link #rdma}'s exchanges share, as its builder's {@code onOpened} saw it. */
  final ServerResources resources;

  final FlightServer rdmaServer;
  final BufferAllocator zeroCopyRoot;
  private final List<AutoCloseable> clients = new ArrayList<>();

  /**
   * Allocators (last path element) whose leak reports a test may provoke on purpose: closing the
   * node under a stream reports what its live leases held at that moment, which depends on timing.
   */
  final java.util.Set<String> allowedLeaks = new java.util.HashSet<>();

  Fixture(CompressionUtil.CodecType compression) throws Exception {
    this(compression, b -> {});
  }

  Fixture(
      CompressionUtil.CodecType compression,
      java.util.function.Consumer<RdmaFlightProducer.Builder> options)
      throws Exception {
    this(compression, options, TransferConfig.builder().provider(ProviderKind.TCP).build());
  }

  Fixture(
      CompressionUtil.CodecType compression,
      java.util.function.Consumer<RdmaFlightProducer.Builder> options,
      TransferConfig nodeConfig)
      throws Exception {
    node = TransferNode.start(nodeConfig);
    plainServer =
        FlightServer.builder(serverAllocator, Location.forGrpcInsecure("127.0.0.1", 0), producer)
            .build()
            .start();
    // The wrapped server's own location is known only after it binds: bind a port first.
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Location grpc = Location.forGrpcInsecure("127.0.0.1", port);
    RdmaFlightProducer.Builder b =
        RdmaFlightProducer.builder(producer, node, serverAllocator)
            .grpcLocation(grpc)
            .compression(compression)
            .registeredMemory(16L << 20, 512L << 20);
    options.accept(b);
    AtomicReference<ServerResources> opened = new AtomicReference<>();
    Consumer<ServerResources> theirs = b.onOpened;
    b.onOpened =
        r -> {
          opened.set(r);
          theirs.accept(r);
        };
    rdma = b.build();
    resources = opened.get();
    rdmaServer = FlightServer.builder(serverAllocator, grpc, rdma).build().start();
    zeroCopyRoot = rdma.memory().newRootAllocator(Long.MAX_VALUE);
    producer.zeroCopyAllocator = zeroCopyRoot;
  }

  Location plainLocation() {
    return Location.forGrpcInsecure("127.0.0.1", plainServer.getPort());
  }

  Location rdmaGrpcLocation() {
    return Location.forGrpcInsecure("127.0.0.1", rdmaServer.getPort());
  }

  private FlightClient plainClient;
  private FlightClient wrappedClient;
  private RdmaFlightClient sharedRdma;

  /** A stock client of the plain server, shared by the tests of a class. */
  synchronized FlightClient plainClient() {
    if (plainClient == null) {
      plainClient = client(plainLocation());
    }
    return plainClient;
  }

  /** A stock client of the wrapped server, shared by the tests of a class. */
  synchronized FlightClient wrappedClient() {
    if (wrappedClient == null) {
      wrappedClient = client(rdmaGrpcLocation());
    }
    return wrappedClient;
  }

  /** An RDMA client (tcp data plane) over {@link #wrappedClient()}, shared. */
  synchronized RdmaFlightClient sharedRdmaClient() {
    if (sharedRdma == null) {
      sharedRdma = rdmaClient(wrappedClient(), b -> b.dataPlane(DataPlane.TCP));
    }
    return sharedRdma;
  }

  FlightClient client(Location l) {
    FlightClient c = FlightClient.builder(clientAllocator, l).build();
    clients.add(c);
    return c;
  }

  RdmaFlightClient rdmaClient(
      FlightClient c, java.util.function.Consumer<RdmaFlightClient.Builder> o) {
    RdmaFlightClient.Builder b =
        RdmaFlightClient.builder(c, clientAllocator)
            .transferConfig(
                TransferConfig.builder().provider(ProviderKind.TCP).poolMaxBytes(8L << 20).build())
            .registeredMemory(16L << 20, 512L << 20);
    o.accept(b);
    RdmaFlightClient r = b.build();
    clients.add(0, r);
    return r;
  }

  /**
   * Waits, with a deadline (30 s), until the server holds no lease and no session, no block and no
   * lease region on its books.
   */
  void awaitServerIdle() {
    io.memwire.transfer.testing.Await.until(
        () -> "server idle: " + rdma.stats(),
        AWAIT,
        () -> {
          var s = rdma.stats();
          return s.get("activeSessions") == 0
              && s.get("leasedBatches") == 0
              && s.get("registeredBlocks") == 0
              && s.get("leaseRegionBytes") == 0
              && s.get("leaseGuards") == 0;
        });
  }

  @Override
  public void close() throws Exception {
    for (AutoCloseable c : clients) {
      c.close();
    }
    rdmaServer.shutdown();
    plainServer.shutdown();
    rdmaServer.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS);
    plainServer.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS);
    rdma.close();
    var leaseRegions = resources.leaseRegions();
    assertTrue(leaseRegions.isClosed(), "lease regions' allocator closed with the producer");
    assertEquals(0, leaseRegions.registeredBytes(), leaseRegions.toVerboseString());
    zeroCopyRoot.close();
    node.close();
    assertEquals(
        0,
        clientAllocator.getAllocatedMemory(),
        "client allocator: " + clientAllocator.toVerboseString());
    assertEquals(
        0,
        serverAllocator.getAllocatedMemory(),
        "server allocator: " + serverAllocator.toVerboseString());
    clientAllocator.close();
    serverAllocator.close();
    root.close();
    assertEquals(0, node.stats().registeredBytes(), "registered bytes after close");
    assertEquals(0, node.stats().memoryBytes(), node.memory().toVerboseString());
    // Units reported at node close must all have been freed since (memoryBytes above is 0).
    assertTrue(
        node.memory().leakReports().stream()
            .allMatch(
                r ->
                    allowedLeaks.contains(
                        r.allocator().substring(r.allocator().lastIndexOf('/') + 1))),
        "registered-memory leak reports: " + node.memory().leakReports());
  }

  /** A server counter of the wrapped producer. */
  long stat(String k) {
    return rdma.stats().get(k);
  }

  /**
   * How long the waits below allow: long enough for a machine loaded many times over (they return
   * as soon as the condition holds, so a fast machine does not pay it).
   */
  private static final java.time.Duration AWAIT = java.time.Duration.ofSeconds(30);

  /** Waits (at most 30 s) until {@code cond} holds. */
  static void await(String what, java.util.function.BooleanSupplier cond) {
    io.memwire.transfer.testing.Await.until(what, AWAIT, cond);
  }
}
