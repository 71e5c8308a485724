package io.memwire.flight.bench;

import io.memwire.flight.DataPlane;
import io.memwire.flight.RdmaFlightClient;
import io.memwire.flight.RdmaFlightProducer;
import io.memwire.flight.RdmaFlightStream;
import io.memwire.flight.SampleBatches;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.zip.CRC32C;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * What the body checksum costs: one stream of 1 MiB batches (copy producer, tcp provider, loopback)
 * pulled from two wrapped servers over the same producer and transfer node, one with {@code
 * bodyChecksum} on and one with it off, in alternating rounds (which one goes first alternates
 * too); prints each round's GB/s and the process's CPU time per GB (server and client share the
 * JVM), the median of each and the ratios on/off of the medians with the min-max of the per-round
 * ratios. CPU per GB resists other processes' load far better than GB/s on a shared machine. Also
 * times CRC32C alone over a 1 MiB direct buffer.
 *
 * <p>Arguments: {@code --rows <n>} rows per batch (default 32768: 1 MiB bodies), {@code --bytes
 * <n>} body bytes per round (default 256m), {@code --rounds <n>} (default 9), {@code --warmup
 * <seconds>} (default 15).
 */
public final class ChecksumCost {
  private static final com.sun.management.OperatingSystemMXBean CPU =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private ChecksumCost() {}

  public static void main(String[] args) throws Exception {
    int rows = 32768;
    long bytes = 256L << 20;
    int rounds = 9;
    int warmup = 15;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--rows":
          rows = Integer.parseInt(args[++i]);
          break;
        case "--bytes":
          bytes = TransferConfig.parseBytes(args[++i]);
          break;
        case "--rounds":
          rounds = Integer.parseInt(args[++i]);
          break;
        case "--warmup":
          warmup = Integer.parseInt(args[++i]);
          break;
        default:
          throw new IllegalArgumentException(
              "unknown argument " + args[i] + "; expected --rows, --bytes, --rounds, --warmup");
      }
    }
    crcAlone(SampleBatches.bodyBytes(rows));
    long batchBytes = SampleBatches.bodyBytes(rows);
    long batches = Math.max(4, bytes / batchBytes);
    String ticket = rows + ":" + batches;
    try (RootAllocator root = new RootAllocator();
        TransferNode node =
            TransferNode.start(
                TransferConfig.builder()
                    .provider(ProviderKind.TCP)
                    .registrationBudget(4L << 30)
                    .build())) {
      BufferAllocator serverAlloc = root.newChildAllocator("server", 0, Long.MAX_VALUE);
      BufferAllocator clientAlloc = root.newChildAllocator("client", 0, Long.MAX_VALUE);
      FlightBench.Producer producer = new FlightBench.Producer(serverAlloc);
      Side on = new Side(producer, node, serverAlloc, clientAlloc, true);
      Side off = new Side(producer, node, serverAlloc, clientAlloc, false);
      try {
        long until = System.nanoTime() + warmup * 1_000_000_000L;
        String small = rows + ":" + Math.max(4, (64L << 20) / batchBytes);
        while (System.nanoTime() < until) {
          on.pull(small);
          off.pull(small);
        }
        double[] gOn = new double[rounds];
        double[] gOff = new double[rounds];
        double[] ratio = new double[rounds];
        double[] cOn = new double[rounds];
        double[] cOff = new double[rounds];
        double[] cRatio = new double[rounds];
        long body = batchBytes * batches;
        System.out.printf(
            Locale.ROOT,
            "%d rows/batch (%d bytes), %d batches per round, %d rounds%n",
            rows,
            batchBytes,
            batches,
            rounds);
        for (int r = 0; r < rounds; r++) {
          double[] a;
          double[] b;
          if (r % 2 == 0) {
            a = on.measure(ticket, body);
            b = off.measure(ticket, body);
          } else {
            b = off.measure(ticket, body);
            a = on.measure(ticket, body);
          }
          gOn[r] = a[0];
          cOn[r] = a[1];
          gOff[r] = b[0];
          cOff[r] = b[1];
          ratio[r] = gOn[r] / gOff[r];
          cRatio[r] = cOn[r] / cOff[r];
          System.out.printf(
              Locale.ROOT,
              "round %d: checksum on %.3f GB/s %.3f cpu-s/GB, off %.3f GB/s %.3f cpu-s/GB; "
                  + "on/off GB/s %.3f, cpu %.3f%n",
              r + 1,
              gOn[r],
              cOn[r],
              gOff[r],
              cOff[r],
              ratio[r],
              cRatio[r]);
        }
        double mcOn = median(cOn);
        double mcOff = median(cOff);
        double[] cr = cRatio.clone();
        Arrays.sort(cr);
        System.out.printf(
            Locale.ROOT,
            "median cpu-s/GB: on %.3f, off %.3f; ratio of medians %.3f (per-round %.3f-%.3f, "
                + "median %.3f)%n",
            mcOn,
            mcOff,
            mcOn / mcOff,
            cr[0],
            cr[rounds - 1],
            median(cRatio));
        double mOn = median(gOn);
        double mOff = median(gOff);
        Arrays.sort(ratio);
        System.out.printf(
            Locale.ROOT,
            "median GB/s: on %.3f, off %.3f; ratio of medians %.3f (per-round %.3f-%.3f, "
                + "median %.3f)%n",
            mOn,
            mOff,
            mOn / mOff,
            ratio[0],
            ratio[rounds - 1],
            median(ratio));
        System.out.println("client (checksum on): " + on.client.stats());
      } finally {
        on.close();
        off.close();
        clientAlloc.close();
        serverAlloc.close();
      }
    }
  }

  /** CRC32C alone over a direct buffer of {@code n} bytes: ns per call, GB/s. */
  private static void crcAlone(long n) {
    ByteBuffer b = ByteBuffer.allocateDirect(Math.toIntExact(n));
    for (int i = 0; i < b.capacity(); i++) {
      b.put(i, (byte) (i * 31));
    }
    long sink = 0;
    for (int i = 0; i < 2000; i++) {
      CRC32C c = new CRC32C();
      c.update(b.duplicate());
      sink += c.getValue();
    }
    double[] ns = new double[7];
    for (int k = 0; k < ns.length; k++) {
      int reps = 500;
      long t0 = System.nanoTime();
      for (int i = 0; i < reps; i++) {
        CRC32C c = new CRC32C();
        c.update(b.duplicate());
        sink += c.getValue();
      }
      ns[k] = (System.nanoTime() - t0) / (double) reps;
    }
    Arrays.sort(ns);
    System.out.printf(
        Locale.ROOT,
        "CRC32C of %d direct bytes: median %.1f us (min %.1f, max %.1f), %.2f GB/s (sink %d)%n",
        n,
        ns[ns.length / 2] / 1000,
        ns[0] / 1000,
        ns[ns.length - 1] / 1000,
        n / ns[ns.length / 2],
        sink & 1);
  }

  private static double median(double[] v) {
    double[] c = v.clone();
    Arrays.sort(c);
    int n = c.length;
    return n % 2 == 1 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  }

  /** One wrapped server with the checksum on or off, and its client. */
  private static final class Side implements AutoCloseable {
    final RdmaFlightProducer producer;
    final FlightServer server;
    final FlightClient flight;
    final RdmaFlightClient client;

    Side(
        FlightBench.Producer delegate,
        TransferNode node,
        BufferAllocator serverAlloc,
        BufferAllocator clientAlloc,
        boolean checksum)
        throws Exception {
      producer =
          RdmaFlightProducer.builder(delegate, node, serverAlloc)
              .registeredMemory(64L << 20, 512L << 20)
              .bodyChecksum(checksum)
              .build();
      server =
          FlightServer.builder(serverAlloc, Location.forGrpcInsecure("127.0.0.1", 0), producer)
              .build()
              .start();
      flight =
          FlightClient.builder(clientAlloc, Location.forGrpcInsecure("127.0.0.1", server.getPort()))
              .build();
      client =
          RdmaFlightClient.builder(flight, clientAlloc)
              .dataPlane(DataPlane.TCP)
              .transferConfig(
                  TransferConfig.builder()
                      .provider(ProviderKind.TCP)
                      .registrationBudget(2L << 30)
                      .build())
              .registeredMemory(64L << 20, 512L << 20)
              .build();
    }

    long pull(String ticket) {
      long rows = 0;
      try (RdmaFlightStream s =
          client.getStream(new Ticket(ticket.getBytes(StandardCharsets.UTF_8)))) {
        while (s.next()) {
          rows += s.getRoot().getRowCount();
        }
      }
      return rows;
    }

    /** {GB/s, CPU seconds of the whole process per GB} of one pull. */
    double[] measure(String ticket, long bodyBytes) {
      long c0 = CPU.getProcessCpuTime();
      long t0 = System.nanoTime();
      pull(ticket);
      long ns = System.nanoTime() - t0;
      long cpu = CPU.getProcessCpuTime() - c0;
      return new double[] {bodyBytes / (double) ns, cpu / (double) bodyBytes};
    }

    @Override
    public void close() throws Exception {
      client.close();
      flight.close();
      server.shutdown();
      server.awaitTermination();
      producer.close();
    }
  }
}
