package io.memwire.verbscheck;

import io.memwire.flight.DataPlane;
import io.memwire.flight.RdmaFlightClient;
import io.memwire.flight.RdmaFlightProducer;
import io.memwire.flight.RdmaFlightStream;
import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.Location;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * Arrow Flight over the verbs provider: a wrapped server whose endpoints carry {@code rdma://}
 * locations, a client with {@link DataPlane#VERBS}, a copying and an in-place (zero-copy,
 * registered memory) producer, batches of 64 KiB, 1 MiB and 16 MiB whose bodies must equal what
 * plain gRPC DoGet returns from the same producer; then a lease that times out and a stream
 * cancelled mid-way, after each of which the server must hold no session, lease or registered
 * block; at the end every allocator must be empty and the node must hold no registration.
 *
 * <pre>FlightCheck --out FILE --bind IP</pre>
 *
 * <p>Writes {@code key=value} lines ({@code check.flight.*=PASS|FAIL} and figures); exit 0 when
 * every check passed.
 */
public final class FlightCheck {
  /** Rows per batch for 64 KiB, 1 MiB and 16 MiB bodies (4 BIGINT columns, 32 bytes a row). */
  private static final int[] ROWS = {2048, 32768, 524288};

  private static final Duration LEASE_TIMEOUT = Duration.ofSeconds(20);

  private final Path out;
  private int failures;

  private ProviderKind provider = ProviderKind.VERBS;

  private FlightCheck(Path out) {
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    Path out = null;
    String bind = null;
    ProviderKind provider = ProviderKind.VERBS;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out" -> out = Paths.get(args[++i]);
        case "--bind" -> bind = args[++i];
        case "--provider" -> provider = ProviderKind.parse("--provider", args[++i]);
        default ->
            throw new IllegalArgumentException(
                "unknown argument "
                    + args[i]
                    + "; usage: FlightCheck --out FILE --bind IP [--provider verbs|ucx]");
      }
    }
    if (out == null || bind == null) {
      throw new IllegalArgumentException("--out and --bind are required");
    }
    Files.writeString(out, "");
    FlightCheck c = new FlightCheck(out);
    c.run(bind, provider);
    c.put("flight.failures", c.failures);
    System.exit(c.failures == 0 ? 0 : 1);
  }

  private void put(String key, Object value) throws IOException {
    String line = key + "=" + String.valueOf(value).replace('\n', ' ') + "\n";
    System.out.print("flight-check " + line);
    Files.writeString(out, line, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
  }

  private void verdict(String name, boolean ok, String detail) throws IOException {
    put("check.flight." + name, ok ? "PASS" : "FAIL");
    if (detail != null) {
      put("detail.flight." + name, detail);
    }
    if (!ok) {
      failures++;
    }
  }

  private void run(String bind, ProviderKind provider) throws Exception {
    this.provider = provider;
    TransferConfig verbs =
        (provider == ProviderKind.UCX
                ? UcxCheckSettings.apply(TransferConfig.builder())
                : TransferConfig.builder())
            .provider(provider)
            .bindAddress(bind)
            .connectTimeout(Duration.ofMinutes(5))
            .readTimeout(Duration.ofMinutes(10))
            .registrationBudget(2L << 30)
            .build();
    RootAllocator root = new RootAllocator();
    BufferAllocator serverAlloc = root.newChildAllocator("server", 0, Long.MAX_VALUE);
    BufferAllocator clientAlloc = root.newChildAllocator("client", 0, Long.MAX_VALUE);
    TransferNode node = TransferNode.start(verbs);
    put("flight.node", node.provider() + ": " + node.selectionReason());
    for (String mode : List.of("copy", "inplace")) {
      long t0 = System.nanoTime();
      try {
        producerRound(mode, node, serverAlloc, clientAlloc, verbs);
      } catch (Throwable e) {
        e.printStackTrace();
        verdict(mode, false, e.toString());
      }
      put(
          "seconds.flight." + mode,
          String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    }
    node.close();
    long registered = node.stats().registeredBytes();
    long server = serverAlloc.getAllocatedMemory();
    long client = clientAlloc.getAllocatedMemory();
    serverAlloc.close();
    clientAlloc.close();
    root.close();
    verdict(
        "memoryReturned",
        registered == 0 && server == 0 && client == 0,
        "node registered bytes "
            + registered
            + ", server allocator "
            + server
            + ", client allocator "
            + client);
  }

  private void producerRound(
      String mode,
      TransferNode node,
      BufferAllocator serverAlloc,
      BufferAllocator clientAlloc,
      TransferConfig verbs)
      throws Exception {
    CheckProducer producer = new CheckProducer(serverAlloc, mode.equals("inplace"));
    FlightServer plain =
        FlightServer.builder(serverAlloc, Location.forGrpcInsecure("127.0.0.1", 0), producer)
            .build()
            .start();
    RdmaFlightProducer rdma =
        RdmaFlightProducer.builder(producer, node, serverAlloc)
            .registeredMemory(32L << 20, 512L << 20)
            .leaseTimeout(LEASE_TIMEOUT)
            // One host, one process pair: nobody else on this fabric (verbs needs the trust flag).
            .trustedFabric(true)
            .build();
    BufferAllocator table = null;
    if (mode.equals("inplace")) {
      table = rdma.memory().newRootAllocator(Long.MAX_VALUE);
      producer.tableAllocator = table;
    }
    FlightServer wrapped =
        FlightServer.builder(serverAlloc, Location.forGrpcInsecure("127.0.0.1", 0), rdma)
            .build()
            .start();
    FlightClient plainClient =
        FlightClient.builder(clientAlloc, Location.forGrpcInsecure("127.0.0.1", plain.getPort()))
            .build();
    FlightClient wrappedClient =
        FlightClient.builder(clientAlloc, Location.forGrpcInsecure("127.0.0.1", wrapped.getPort()))
            .build();
    try {
      for (int rows : ROWS) {
        int batches = rows >= 524288 ? 3 : rows >= 32768 ? 8 : 16;
        String ticket = rows + ":" + batches;
        long t0 = System.nanoTime();
        List<Long> grpc = BatchDigests.grpc(plainClient, ticket);
        double grpcSeconds = (System.nanoTime() - t0) / 1e9;
        String[] plane = new String[1];
        long t1 = System.nanoTime();
        List<Long> viaRdma;
        try (RdmaFlightClient c = client(wrappedClient, clientAlloc, verbs, 4, 64L << 20)) {
          viaRdma = BatchDigests.rdma(c, ticket, plane);
        }
        double rdmaSeconds = (System.nanoTime() - t1) / 1e9;
        long bytes = CheckProducer.bodyBytes(rows) * batches;
        String name = mode + "." + (CheckProducer.bodyBytes(rows) >> 10) + "KiB";
        put("flight." + name + ".grpcMBps", BatchDigests.megabytesPerSecond(bytes, grpcSeconds));
        put("flight." + name + ".rdmaMBps", BatchDigests.megabytesPerSecond(bytes, rdmaSeconds));
        verdict(
            name,
            grpc.equals(viaRdma)
                && grpc.size() == batches
                && provider.toString().equalsIgnoreCase(plane[0]),
            "batches "
                + viaRdma.size()
                + "/"
                + grpc.size()
                + ", data plane "
                + plane[0]
                + ", bodies equal "
                + grpc.equals(viaRdma));
      }
      awaitIdle(rdma, mode.equals("inplace"));

      // A lease that times out: a raw exchange takes one batch and never frees it. (The real
      // client frees each lease as soon as its bytes are read, so stalling it cannot provoke
      // the timeout.)
      long expired0 = rdma.stats().get("leasesExpired");
      String leaseError = "none";
      byte firstKind = 0;
      ExchangeRequest req =
          new ExchangeRequest(provider, 1, 64L << 20, CheckProducer.ticket(32768, 6).getBytes());
      try (FlightClient.ExchangeReaderWriter rw =
          wrappedClient.doExchange(FlightDescriptor.command(req.toBytes()))) {
        firstKind = nextKind(rw);
        try {
          while (nextKind(rw) != 0) {
            // the server must end the exchange instead of sending more batches
          }
        } catch (FlightRuntimeException e) {
          leaseError = e.status().code() + ": " + e.getMessage();
        }
      } catch (FlightRuntimeException e) {
        // close() may report the server's error again
      }
      awaitIdle(rdma, mode.equals("inplace"));
      long expired = rdma.stats().get("leasesExpired") - expired0;
      verdict(
          mode + ".leaseTimeout",
          firstKind == ServerMessage.BATCH
              && expired >= 1
              && leaseError.startsWith("TIMED_OUT")
              && leaseError.contains("lease timeout"),
          "first message kind "
              + firstKind
              + ", leases expired "
              + expired
              + ", client saw "
              + leaseError);

      // A stream cancelled mid-way.
      long cancelled0 = rdma.stats().get("sessionsCancelled");
      try (RdmaFlightClient c = client(wrappedClient, clientAlloc, verbs, 2, 64L << 20)) {
        RdmaFlightStream s = c.getStream(CheckProducer.ticket(32768, 50));
        boolean first = s.next();
        boolean two = first && s.next();
        s.cancel("verbs-check cancels", null);
        String error = "none";
        try {
          while (s.next()) {
            // drained or failed below
          }
        } catch (FlightRuntimeException e) {
          error = e.status().code().toString();
        }
        s.close();
        awaitIdle(rdma, mode.equals("inplace"));
        long cancelled = rdma.stats().get("sessionsCancelled") - cancelled0;
        verdict(
            mode + ".cancel",
            two && cancelled == 1 && error.equals(FlightStatusCode.CANCELLED.toString()),
            "two batches "
                + two
                + ", server sessions cancelled "
                + cancelled
                + ", client saw "
                + error);
      }
      put("flight." + mode + ".serverStats", rdma.stats());
    } finally {
      plainClient.close();
      wrappedClient.close();
      wrapped.shutdown();
      plain.shutdown();
      wrapped.awaitTermination(60, TimeUnit.SECONDS);
      plain.awaitTermination(60, TimeUnit.SECONDS);
      rdma.close();
      producer.close();
      if (table != null) {
        table.close();
      }
    }
  }

  private RdmaFlightClient client(
      FlightClient wrapped,
      BufferAllocator alloc,
      TransferConfig verbs,
      int window,
      long windowBytes) {
    return RdmaFlightClient.builder(wrapped, alloc)
        .dataPlane(provider == ProviderKind.UCX ? DataPlane.UCX : DataPlane.VERBS)
        .transferConfig(verbs)
        .registeredMemory(32L << 20, 512L << 20)
        .window(window, windowBytes)
        .readTimeout(Duration.ofMinutes(10))
        .build();
  }

  /**
   * No session and no lease left. Registered blocks count only for the copying producer: the
   * in-place producer's table lives in registered memory until the producer closes.
   */
  private static void awaitIdle(RdmaFlightProducer rdma, boolean inPlace)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (true) {
      Map<String, Long> s = rdma.stats();
      if (s.get("activeSessions") == 0
          && s.get("leasedBatches") == 0
          && (inPlace || s.get("registeredBlocks") == 0)) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("server not idle within 2 minutes: " + s);
      }
      Thread.sleep(50);
    }
  }

  /** The kind of the next server message of a raw exchange, or 0 at its end. */
  private static byte nextKind(FlightClient.ExchangeReaderWriter rw) {
    if (!rw.getReader().next()) {
      return 0;
    }
    ArrowBuf md = rw.getReader().getLatestMetadata();
    byte[] b = new byte[(int) md.readableBytes()];
    md.getBytes(0, b);
    return ServerMessage.decode(ByteBuffer.wrap(b)).kind();
  }
}
