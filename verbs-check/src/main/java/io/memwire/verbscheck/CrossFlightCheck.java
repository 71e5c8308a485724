package io.memwire.verbscheck;

import io.memwire.flight.DataPlane;
import io.memwire.flight.RdmaFlightClient;
import io.memwire.flight.RdmaFlightProducer;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.Location;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * Arrow Flight over verbs between the two Soft-RoCE guests of {@code run-in-vm.sh --pair}: one
 * guest serves the check's producer plainly (gRPC) and wrapped ({@code rdma://} endpoints); the
 * other pulls 1 MiB and 16 MiB batches over the wire with both and compares the bodies. Each side
 * checks its own allocators and registrations are empty at the end.
 *
 * <pre>
 * CrossFlightCheck serve DIR --bind IP --out FILE   writes DIR/flight-ports ("plain wrapped"),
 *                                                   ends when DIR/flight-done appears
 * CrossFlightCheck read DIR --bind IP --peer IP --out FILE [--pitfall mtu|udp4791]
 * (both: [--name cross])
 * </pre>
 *
 * <p>Under a pitfall the reader asks for data plane {@code auto}, and each stream falls back to
 * DoGet with the same bodies: with {@code --pitfall mtu} (the reader's guest has the larger MTU)
 * its verbs connect is refused naming the MTUs; with {@code udp4791} (the server's guest drops
 * RoCE's port) it times out naming the firewall.
 *
 * <p>Appends {@code NAME.flight.*} lines and {@code check.NAME.flight.*=PASS|FAIL} to FILE; exit 0
 * when every check of that side passed.
 */
public final class CrossFlightCheck {
  /** Rows per batch for 1 MiB and 16 MiB bodies (4 BIGINT columns, 32 bytes a row). */
  private static final int[] ROWS = {32768, 524288};

  private final Path out;
  private final String name;
  private final String pitfall;
  private int failures;

  private CrossFlightCheck(Path out, String name, String pitfall) {
    this.out = out;
    this.name = name;
    this.pitfall = pitfall;
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      usage();
    }
    Path dir = Paths.get(args[1]);
    String bind = null;
    String peer = null;
    Path out = null;
    String name = "cross";
    String pitfall = null;
    for (int i = 2; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--bind" -> bind = args[i + 1];
        case "--peer" -> peer = args[i + 1];
        case "--out" -> out = Paths.get(args[i + 1]);
        case "--name" -> name = args[i + 1];
        case "--pitfall" -> pitfall = args[i + 1];
        default -> usage();
      }
    }
    if (bind == null
        || out == null
        || (pitfall != null && !pitfall.equals("mtu") && !pitfall.equals("udp4791"))) {
      usage();
    }
    CrossFlightCheck c = new CrossFlightCheck(out, name, pitfall);
    switch (args[0]) {
      case "serve" -> c.serve(dir, bind);
      case "read" -> {
        if (peer == null) {
          usage();
        }
        c.read(dir, bind, peer);
      }
      default -> usage();
    }
    System.exit(c.failures == 0 ? 0 : 1);
  }

  private static void usage() {
    System.err.println(
        "usage: CrossFlightCheck serve DIR --bind IP --out FILE"
            + " | read DIR --bind IP --peer IP --out FILE [--pitfall mtu|udp4791]; both [--name NAME]");
    System.exit(2);
  }

  private void put(String key, Object value) throws IOException {
    String line = key + "=" + String.valueOf(value).replace('\n', ' ') + "\n";
    System.out.print("cross-flight " + line);
    Files.writeString(
        out, line, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  private void verdict(String name, boolean ok, String detail) throws IOException {
    put("check." + this.name + ".flight." + name, ok ? "PASS" : "FAIL");
    if (detail != null) {
      put("detail." + this.name + ".flight." + name, detail);
    }
    if (!ok) {
      failures++;
    }
  }

  private static TransferConfig verbs(String bind, boolean pitfall) {
    return TransferConfig.builder()
        .provider(ProviderKind.VERBS)
        .bindAddress(bind)
        .connectTimeout(pitfall ? Duration.ofSeconds(60) : Duration.ofMinutes(5))
        .readTimeout(Duration.ofMinutes(10))
        .registrationBudget(1L << 30)
        .build();
  }

  private void serve(Path dir, String bind) throws Exception {
    RootAllocator root = new RootAllocator();
    BufferAllocator serverAlloc = root.newChildAllocator("server", 0, Long.MAX_VALUE);
    TransferNode node = TransferNode.start(verbs(bind, false));
    put(name + ".flight.serverNode", node.provider() + " " + node.localAddress());
    CheckProducer producer = new CheckProducer(serverAlloc, false);
    FlightServer plain =
        FlightServer.builder(serverAlloc, Location.forGrpcInsecure(bind, 0), producer)
            .build()
            .start();
    RdmaFlightProducer rdma =
        RdmaFlightProducer.builder(producer, node, serverAlloc)
            .registeredMemory(32L << 20, 256L << 20)
            .leaseTimeout(Duration.ofMinutes(5))
            // Two guests on their own wire, nobody else on it (verbs needs the trust flag).
            .trustedFabric(true)
            .build();
    FlightServer wrapped =
        FlightServer.builder(serverAlloc, Location.forGrpcInsecure(bind, 0), rdma).build().start();
    Path ports = dir.resolve("flight-ports");
    Path tmp = dir.resolve("flight-ports.tmp");
    Files.writeString(tmp, plain.getPort() + " " + wrapped.getPort());
    Files.move(tmp, ports, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(40);
    while (!Files.exists(dir.resolve("flight-done")) && System.nanoTime() < end) {
      Thread.sleep(200);
    }
    Map<String, Long> stats = rdma.stats();
    put(name + ".flight.serverStats", stats);
    wrapped.shutdown();
    plain.shutdown();
    wrapped.awaitTermination(60, TimeUnit.SECONDS);
    plain.awaitTermination(60, TimeUnit.SECONDS);
    rdma.close();
    producer.close();
    node.close();
    long registered = node.stats().registeredBytes();
    long server = serverAlloc.getAllocatedMemory();
    serverAlloc.close();
    root.close();
    verdict(
        "serverMemoryReturned",
        registered == 0 && server == 0 && stats.get("activeSessions") == 0,
        "node registered bytes "
            + registered
            + ", server allocator "
            + server
            + ", sessions at the end "
            + stats.get("activeSessions"));
  }

  private void read(Path dir, String bind, String peer) throws Exception {
    Path ports = dir.resolve("flight-ports");
    long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(15);
    while (!Files.exists(ports) && System.nanoTime() < end) {
      Thread.sleep(200);
    }
    String[] p = Files.readString(ports).trim().split(" ");
    TransferConfig verbs = verbs(bind, pitfall != null);
    RootAllocator root = new RootAllocator();
    BufferAllocator clientAlloc = root.newChildAllocator("client", 0, Long.MAX_VALUE);
    FlightClient plainClient =
        FlightClient.builder(clientAlloc, Location.forGrpcInsecure(peer, Integer.parseInt(p[0])))
            .build();
    FlightClient wrappedClient =
        FlightClient.builder(clientAlloc, Location.forGrpcInsecure(peer, Integer.parseInt(p[1])))
            .build();
    try {
      for (int rows : ROWS) {
        int batches = rows >= 524288 ? 3 : 8;
        String ticket = rows + ":" + batches;
        String size = (CheckProducer.bodyBytes(rows) >> 10) + "KiB";
        try {
          long t0 = System.nanoTime();
          List<Long> grpc = BatchDigests.grpc(plainClient, ticket);
          double grpcSeconds = (System.nanoTime() - t0) / 1e9;
          String[] plane = new String[2];
          long t1 = System.nanoTime();
          List<Long> viaRdma;
          try (RdmaFlightClient c =
              RdmaFlightClient.builder(wrappedClient, clientAlloc)
                  .dataPlane(pitfall == null ? DataPlane.VERBS : DataPlane.AUTO)
                  .transferConfig(verbs)
                  .registeredMemory(32L << 20, 256L << 20)
                  .window(4, 64L << 20)
                  .readTimeout(Duration.ofMinutes(10))
                  .build()) {
            viaRdma = BatchDigests.rdma(c, ticket, plane);
          }
          double rdmaSeconds = (System.nanoTime() - t1) / 1e9;
          long bytes = CheckProducer.bodyBytes(rows) * batches;
          put(
              name + ".flight." + size + ".grpcMBps",
              BatchDigests.megabytesPerSecond(bytes, grpcSeconds));
          put(
              name + ".flight." + size + ".rdmaMBps",
              BatchDigests.megabytesPerSecond(bytes, rdmaSeconds));
          boolean equal = grpc.equals(viaRdma) && grpc.size() == batches;
          // Under a pitfall: DoGet, because the verbs connect failed naming the cause.
          String cause = "mtu".equals(pitfall) ? "MTU mismatch" : "UDP 4791 unreachable";
          boolean planeOk =
              pitfall == null
                  ? "verbs".equalsIgnoreCase(plane[0])
                  : "grpc".equalsIgnoreCase(plane[0])
                      && plane[1] != null
                      && plane[1].contains(cause);
          verdict(
              size,
              equal && planeOk,
              "batches "
                  + viaRdma.size()
                  + "/"
                  + grpc.size()
                  + ", data plane "
                  + plane[0]
                  + (plane[1] == null ? "" : " (" + plane[1] + ")")
                  + ", bodies equal "
                  + grpc.equals(viaRdma)
                  + ", "
                  + bind
                  + " reads "
                  + peer
                  + ", "
                  + String.format(java.util.Locale.ROOT, "%.1f", rdmaSeconds)
                  + " s");
        } catch (Exception e) {
          e.printStackTrace();
          verdict(size, false, e.toString());
        }
      }
    } finally {
      plainClient.close();
      wrappedClient.close();
      Files.writeString(dir.resolve("flight-done"), "");
    }
    long client = clientAlloc.getAllocatedMemory();
    clientAlloc.close();
    root.close();
    verdict("clientMemoryReturned", client == 0, "client allocator " + client);
  }
}
