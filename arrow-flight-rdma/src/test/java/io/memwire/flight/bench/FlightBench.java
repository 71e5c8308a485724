package io.memwire.flight.bench;

import io.memwire.flight.DataPlane;
import io.memwire.flight.RdmaFlightClient;
import io.memwire.flight.RdmaFlightProducer;
import io.memwire.flight.RdmaFlightStream;
import io.memwire.flight.SampleBatches;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Arrow's Flight performance shape on loopback: 4 nullable BIGINT columns, batches of 4K rows and
 * of 1 to 32 MiB, 1 to 8 parallel streams; plain gRPC DoGet against the RDMA client on the tcp
 * provider, in one run, same producer, same JVM. Prints GB/s of body bytes and the ratio, and
 * writes a CSV.
 *
 * <p>Two producers, each served by both paths: {@code copy} refills one root and reuses it for
 * every batch, as Arrow's perf server does, so the RDMA wrapper copies each batch into registered
 * memory; {@code inplace} is an in-memory table whose batches live in the wrapper's registered
 * memory and are declared zero-copy, so they are leased in place (and plain DoGet sends the same
 * buffers without Flight's copy).
 *
 * <p>Against machine noise each point runs both paths alternately (gRPC first in odd repetitions,
 * RDMA first in even ones) several times and reports the median of each and the ratio of the
 * medians, with the spread of the per-repetition ratios.
 *
 * <p>Arguments: {@code --quick} (fewer cases, less data), {@code --bytes <n>} body bytes per
 * measured run (default 1 GiB, quick 256 MiB), {@code --reps <n>} repetitions per point (default 5,
 * quick 3), {@code --rows a,b} and {@code --streams a,b} to run chosen points only, {@code
 * --producer copy,inplace} (default both), {@code --window <batches>} and {@code --window-bytes
 * <n>} (default: the client's defaults), {@code --warmup <seconds>} (both paths alternately before
 * each producer's first point, default 20), {@code --csv <path>} (default target/flight-bench.csv),
 * {@code --profile-rdma} (the RDMA path alone, for a profiler; prints GB/s only); {@code
 * --checksum-cost [args]} runs {@link ChecksumCost} instead.
 *
 * <p>{@code -Dmemwire.bench.provider=ucx} (with {@code -Dmemwire.bench.ucxTransports=...} and
 * {@code UCX_ERROR_SIGNALS=} in the environment) runs the RDMA path over the ucx provider instead
 * of tcp. Each point also prints the process's CPU (client and server together) per GiB of body for
 * each path, medians over the repetitions, and the serving side's alone: the server node's threads
 * (started in a thread group of their own, which every thread they start inherits), both Flight
 * servers' gRPC executor and event loops (given to them, named {@code bench-server-}) and the
 * wrapper's exchange threads; with the ratio of the two paths' serving CPU and its spread.
 */
public final class FlightBench {
  private static final Schema SCHEMA = SampleBatches.SCHEMA;

  private FlightBench() {}

  private static final ProviderKind PROVIDER =
      ProviderKind.parse(
          "memwire.bench.provider", System.getProperty("memwire.bench.provider", "tcp"));

  /** The benchmark's transfer settings: tcp, or ucx with the transports given. */
  private static TransferConfig transferConfig() {
    io.memwire.transfer.TransferConfigBuilder b =
        TransferConfig.builder().provider(PROVIDER).registrationBudget(8L << 30);
    String tls = System.getProperty("memwire.bench.ucxTransports");
    if (PROVIDER == ProviderKind.UCX && tls != null) {
      b.set("ucxTransports", tls);
    }
    return b.build();
  }

  private static final java.lang.management.ThreadMXBean THREADS =
      java.lang.management.ManagementFactory.getThreadMXBean();

  /** CPU of every live thread of this process, in ns. */
  private static long processCpuNanos() {
    long sum = 0;
    for (long id : THREADS.getAllThreadIds()) {
      long t = THREADS.getThreadCpuTime(id);
      if (t > 0) {
        sum += t;
      }
    }
    return sum;
  }

  /** The server node's threads and every thread they start. */
  private static final ThreadGroup SERVER_GROUP = new ThreadGroup("bench-server");

  /** Threads of the serving side that are not in {@link #SERVER_GROUP}. */
  private static boolean servingThread(Thread t) {
    String n = t.getName();
    return t.getThreadGroup() == SERVER_GROUP
        || n.startsWith("bench-server-")
        || (n.startsWith("memwire-flight-") && !n.startsWith("memwire-flight-client-"));
  }

  /** CPU of the serving side's live threads, in ns. */
  private static long servingCpuNanos() {
    long sum = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (servingThread(t)) {
        long c = THREADS.getThreadCpuTime(t.getId());
        if (c > 0) {
          sum += c;
        }
      }
    }
    return sum;
  }

  /** Starts the server's node on a thread of {@link #SERVER_GROUP}. */
  private static TransferNode startServerNode() throws InterruptedException {
    Object[] result = new Object[1];
    Thread starter =
        new Thread(
            SERVER_GROUP,
            () -> {
              try {
                result[0] = TransferNode.start(transferConfig());
              } catch (RuntimeException | Error e) {
                result[0] = e;
              }
            },
            "bench-server-start");
    starter.start();
    starter.join();
    if (result[0] instanceof RuntimeException e) {
      throw e;
    }
    if (result[0] instanceof Error e) {
      throw e;
    }
    return (TransferNode) result[0];
  }

  /** A Flight server whose gRPC threads are the serving side's own (named bench-server-). */
  private static FlightServer server(
      String label,
      BufferAllocator alloc,
      org.apache.arrow.flight.FlightProducer producer,
      List<Object> owned) {
    java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.ThreadFactory named =
        r -> {
          Thread t = new Thread(r, "bench-server-" + label + "-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        };
    io.netty.channel.EventLoopGroup boss =
        new io.netty.channel.MultiThreadIoEventLoopGroup(
            1, named, io.netty.channel.nio.NioIoHandler.newFactory());
    io.netty.channel.EventLoopGroup workers =
        new io.netty.channel.MultiThreadIoEventLoopGroup(
            2, named, io.netty.channel.nio.NioIoHandler.newFactory());
    ExecutorService executor = Executors.newCachedThreadPool(named);
    owned.add(boss);
    owned.add(workers);
    owned.add(executor);
    try {
      return FlightServer.builder(alloc, Location.forGrpcInsecure("127.0.0.1", 0), producer)
          .executor(executor)
          .transportHint(
              "netty.channelType", io.netty.channel.socket.nio.NioServerSocketChannel.class)
          .transportHint("netty.bossEventLoopGroup", boss)
          .transportHint("netty.workerEventLoopGroup", workers)
          .build()
          .start();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Stops what {@link #server} made for a server once it is shut down. */
  private static void stopOwned(List<Object> owned) {
    for (Object o : owned) {
      if (o instanceof io.netty.channel.EventLoopGroup g) {
        g.shutdownGracefully(0, 0, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
      } else if (o instanceof ExecutorService e) {
        e.shutdownNow();
      }
    }
  }

  /** Serves "rows:batches" tickets from one pre-filled root it reuses, as Arrow's perf server. */
  static final class Producer extends NoOpFlightProducer {
    private final BufferAllocator allocator;

    Producer(BufferAllocator allocator) {
      this.allocator = allocator;
    }

    @Override
    public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
      String[] p = new String(ticket.getBytes(), StandardCharsets.UTF_8).split(":");
      int rows = Integer.parseInt(p[0]);
      long batches = Long.parseLong(p[1]);
      try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
        fill(root, rows, 0);
        listener.start(root);
        for (long b = 0; b < batches && !listener.isCancelled(); b++) {
          listener.putNext();
        }
        listener.completed();
      }
    }
  }

  /**
   * An in-memory table server: for each batch size it builds a few distinct batches once, in memory
   * from the given allocator, and serves "rows:batches" tickets by loading them in turn into a root
   * and calling {@code putNext}. The batches never change, so it declares zero-copy: the RDMA
   * wrapper leases them in place when the allocator is its registered memory, and plain DoGet sends
   * them without Flight's copy into the gRPC message.
   */
  static final class TableProducer extends NoOpFlightProducer implements AutoCloseable {
    /** Distinct batches per size: enough that consecutive batches are different memory. */
    private static final long TABLE_BYTES = 64L << 20;

    private volatile BufferAllocator allocator;
    private final java.util.Map<Integer, List<org.apache.arrow.vector.ipc.message.ArrowRecordBatch>>
        tables = new java.util.concurrent.ConcurrentHashMap<>();

    /** Where the table lives; set before the first stream. */
    void allocator(BufferAllocator allocator) {
      this.allocator = allocator;
    }

    private List<org.apache.arrow.vector.ipc.message.ArrowRecordBatch> table(int rows) {
      return tables.computeIfAbsent(
          rows,
          r -> {
            int n = (int) Math.max(2, Math.min(16, TABLE_BYTES / bodyBytes(r)));
            List<org.apache.arrow.vector.ipc.message.ArrowRecordBatch> t = new ArrayList<>();
            try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
              for (int i = 0; i < n; i++) {
                fill(root, r, i);
                t.add(new org.apache.arrow.vector.VectorUnloader(root).getRecordBatch());
              }
            }
            return t;
          });
    }

    @Override
    public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
      String[] p = new String(ticket.getBytes(), StandardCharsets.UTF_8).split(":");
      int rows = Integer.parseInt(p[0]);
      long batches = Long.parseLong(p[1]);
      List<org.apache.arrow.vector.ipc.message.ArrowRecordBatch> t = table(rows);
      try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
        org.apache.arrow.vector.VectorLoader loader =
            new org.apache.arrow.vector.VectorLoader(root);
        listener.setUseZeroCopy(true);
        listener.start(root);
        for (long b = 0; b < batches && !listener.isCancelled(); b++) {
          loader.load(t.get((int) (b % t.size())));
          listener.putNext();
        }
        listener.completed();
      }
    }

    @Override
    public void close() {
      tables
          .values()
          .forEach(t -> t.forEach(org.apache.arrow.vector.ipc.message.ArrowRecordBatch::close));
      tables.clear();
    }
  }

  /** Fills every column of {@code root} with {@code rows} values (every 101st null). */
  static void fill(VectorSchemaRoot root, int rows, int seed) {
    SampleBatches.fill(root, rows, seed);
  }

  static long bodyBytes(int rows) {
    return SampleBatches.bodyBytes(rows);
  }

  public static void main(String[] args) throws Exception {
    boolean quick = false;
    long target = -1;
    Path csv = Path.of("target", "flight-bench.csv");
    int reps = -1;
    int[] rowsArg = null;
    int[] streamsArg = null;
    boolean profileRdma = false;
    List<String> producers = List.of("copy", "inplace");
    int windowBatches = 0;
    int warmupSeconds = 20;
    long windowBytes = 0;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--checksum-cost":
          ChecksumCost.main(Arrays.copyOfRange(args, i + 1, args.length));
          return;
        case "--quick":
          quick = true;
          break;
        case "--bytes":
          target = TransferConfig.parseBytes(args[++i]);
          break;
        case "--csv":
          csv = Path.of(args[++i]);
          break;
        case "--reps":
          reps = Integer.parseInt(args[++i]);
          break;
        case "--rows":
          rowsArg = ints(args[++i]);
          break;
        case "--streams":
          streamsArg = ints(args[++i]);
          break;
        case "--profile-rdma":
          profileRdma = true;
          break;
        case "--producer":
          producers = List.of(args[++i].split(","));
          for (String m : producers) {
            if (!m.equals("copy") && !m.equals("inplace")) {
              throw new IllegalArgumentException("--producer takes copy, inplace or both: " + m);
            }
          }
          break;
        case "--warmup":
          warmupSeconds = Integer.parseInt(args[++i]);
          break;
        case "--window":
          windowBatches = Integer.parseInt(args[++i]);
          break;
        case "--window-bytes":
          windowBytes = TransferConfig.parseBytes(args[++i]);
          break;
        default:
          throw new IllegalArgumentException(
              "unknown argument "
                  + args[i]
                  + "; expected --quick, --bytes <n>, --reps <n>, --rows a,b, --streams a,b, "
                  + "--csv <path>, --producer copy,inplace, --window <batches>, --window-bytes <n>, "
                  + "--warmup <seconds>, --profile-rdma");
      }
    }
    if (target < 0) {
      target = quick ? 256L << 20 : 1L << 30;
    }
    if (reps < 1) {
      reps = quick ? 3 : 5;
    }
    // rows per batch: 4K rows, then 1, 4, 16 and 32 MiB bodies (32 bytes of data per row).
    int[] rowsPerBatch =
        rowsArg != null
            ? rowsArg
            : quick
                ? new int[] {4096, 1 << 15, 1 << 17, 1 << 20}
                : new int[] {4096, 1 << 15, 1 << 17, 1 << 19, 1 << 20};
    int[] streamCounts =
        streamsArg != null ? streamsArg : quick ? new int[] {1, 4} : new int[] {1, 2, 4, 8};

    List<String> lines = new ArrayList<>();
    lines.add(
        "producer,batch_rows,batch_bytes,streams,body_bytes,reps,grpc_gbps_median,"
            + "rdma_tcp_gbps_median,ratio_of_medians,ratio_min,ratio_max,"
            + "grpc_serving_cpu_ms_per_gib,rdma_serving_cpu_ms_per_gib,serving_cpu_ratio_median,"
            + "serving_cpu_ratio_min,serving_cpu_ratio_max");
    try (RootAllocator root = new RootAllocator();
        TransferNode node = startServerNode()) {
      for (String mode : producers) {
        BufferAllocator serverAlloc = root.newChildAllocator("server-" + mode, 0, Long.MAX_VALUE);
        BufferAllocator clientAlloc = root.newChildAllocator("client-" + mode, 0, Long.MAX_VALUE);
        boolean inPlace = mode.equals("inplace");
        TableProducer table = inPlace ? new TableProducer() : null;
        NoOpFlightProducer producer = inPlace ? table : new Producer(serverAlloc);
        List<Object> serverThreads = new ArrayList<>();
        FlightServer plain = server("doget", serverAlloc, producer, serverThreads);
        RdmaFlightProducer rdmaProducer =
            RdmaFlightProducer.builder(producer, node, serverAlloc)
                .registeredMemory(64L << 20, 1536L << 20)
                // one process on loopback: the benchmark's own client is the only peer
                .trustedFabric(PROVIDER == ProviderKind.UCX)
                .build();
        // The table lives in the wrapper's registered memory, so it is leased in place; plain
        // DoGet serves the very same buffers.
        BufferAllocator tableAlloc =
            inPlace ? rdmaProducer.memory().newRootAllocator(Long.MAX_VALUE) : null;
        if (inPlace) {
          table.allocator(tableAlloc);
        }
        FlightServer wrapped = server("wrapped", serverAlloc, rdmaProducer, serverThreads);
        FlightClient plainClient =
            FlightClient.builder(
                    clientAlloc, Location.forGrpcInsecure("127.0.0.1", plain.getPort()))
                .build();
        FlightClient wrappedClient =
            FlightClient.builder(
                    clientAlloc, Location.forGrpcInsecure("127.0.0.1", wrapped.getPort()))
                .build();
        ExecutorService pool =
            Executors.newCachedThreadPool(
                r -> {
                  Thread t = new Thread(r, "bench-stream");
                  t.setDaemon(true);
                  return t;
                });
        boolean warmedUp = false;
        System.out.println(
            inPlace
                ? "producer inplace: an in-memory table in registered memory, zero-copy (leased in "
                    + "place; DoGet sends the same buffers without a copy)"
                : "producer copy: one root refilled per stream and reused for every batch (copied "
                    + "into registered memory per batch)");
        System.out.printf(
            Locale.ROOT,
            "%-10s %-10s %-7s %-10s %-10s %-8s %s%n",
            "rows/batch",
            "batch",
            "streams",
            "gRPC GB/s",
            "RDMA GB/s",
            "ratio",
            "(ratio min-max, " + reps + " alternating reps, medians)");
        for (int rows : rowsPerBatch) {
          long batchBytes = bodyBytes(rows);
          RdmaFlightClient.Builder cb =
              RdmaFlightClient.builder(wrappedClient, clientAlloc)
                  .dataPlane(PROVIDER == ProviderKind.UCX ? DataPlane.UCX : DataPlane.TCP)
                  .transferConfig(transferConfig())
                  .registeredMemory(64L << 20, 1536L << 20);
          if (windowBatches > 0) {
            cb.window(windowBatches, windowBytes > 0 ? windowBytes : windowBatches * batchBytes);
          }
          try (RdmaFlightClient rdma = cb.build()) {
            for (int streams : streamCounts) {
              long batchesPerStream = Math.max(4, target / batchBytes / streams);
              String ticket = rows + ":" + batchesPerStream;
              long bytes = batchBytes * batchesPerStream * streams;
              if (!warmedUp) {
                // A cold JVM runs whichever path it meets first at a fraction of its speed
                // (gRPC DoGet at a third): both paths run alternately for a while before the
                // first measurement of each producer, so the JIT has compiled both.
                long until = System.nanoTime() + warmupSeconds * 1_000_000_000L;
                String small = rows + ":" + Math.max(4, (64L << 20) / batchBytes);
                while (System.nanoTime() < until) {
                  if (!profileRdma) {
                    run(pool, 1, () -> grpc(plainClient, small));
                  }
                  run(pool, 1, () -> rdma(rdma, small));
                }
                warmedUp = true;
              }
              if (profileRdma) {
                // Only the RDMA path, for a profiler: no gRPC DoGet runs, no ratio is printed.
                run(pool, streams, () -> rdma(rdma, ticket));
                for (int rep = 0; rep < reps; rep++) {
                  double r = measure(pool, streams, () -> rdma(rdma, ticket), bytes);
                  System.out.printf(
                      Locale.ROOT,
                      "%-10d %-10s %-7d %-10s %-10.2f%n",
                      rows,
                      human(batchBytes),
                      streams,
                      "-",
                      r);
                }
                continue;
              }
              // Warm up both paths once at this point, then measure each.
              run(pool, streams, () -> grpc(plainClient, ticket));
              run(pool, streams, () -> rdma(rdma, ticket));
              double[] gs = new double[reps];
              double[] rs = new double[reps];
              double[] ratios = new double[reps];
              double[] gcpu = new double[reps];
              double[] rcpu = new double[reps];
              double[] gserve = new double[reps];
              double[] rserve = new double[reps];
              double[] serveRatios = new double[reps];
              double gib = bytes / (double) (1L << 30);
              for (int rep = 0; rep < reps; rep++) {
                // Alternate which path goes first, so a burst of noise does not favour one.
                long c0;
                long s0;
                if (rep % 2 == 0) {
                  c0 = processCpuNanos();
                  s0 = servingCpuNanos();
                  gs[rep] = measure(pool, streams, () -> grpc(plainClient, ticket), bytes);
                  gserve[rep] = (servingCpuNanos() - s0) / 1e6 / gib;
                  gcpu[rep] = (processCpuNanos() - c0) / 1e6 / gib;
                  c0 = processCpuNanos();
                  s0 = servingCpuNanos();
                  rs[rep] = measure(pool, streams, () -> rdma(rdma, ticket), bytes);
                  rserve[rep] = (servingCpuNanos() - s0) / 1e6 / gib;
                  rcpu[rep] = (processCpuNanos() - c0) / 1e6 / gib;
                } else {
                  c0 = processCpuNanos();
                  s0 = servingCpuNanos();
                  rs[rep] = measure(pool, streams, () -> rdma(rdma, ticket), bytes);
                  rserve[rep] = (servingCpuNanos() - s0) / 1e6 / gib;
                  rcpu[rep] = (processCpuNanos() - c0) / 1e6 / gib;
                  c0 = processCpuNanos();
                  s0 = servingCpuNanos();
                  gs[rep] = measure(pool, streams, () -> grpc(plainClient, ticket), bytes);
                  gserve[rep] = (servingCpuNanos() - s0) / 1e6 / gib;
                  gcpu[rep] = (processCpuNanos() - c0) / 1e6 / gib;
                }
                ratios[rep] = rs[rep] / gs[rep];
                serveRatios[rep] = rserve[rep] / gserve[rep];
                System.out.printf(
                    Locale.ROOT,
                    "  rep %d: GB/s gRPC %.2f, %s %.2f; serving CPU ms/GiB gRPC %.0f, %s %.0f%n",
                    rep + 1,
                    gs[rep],
                    PROVIDER,
                    rs[rep],
                    gserve[rep],
                    PROVIDER,
                    rserve[rep]);
              }
              System.out.printf(
                  Locale.ROOT,
                  "  process CPU ms/GiB (median): gRPC %.0f, %s %.0f%n",
                  median(gcpu),
                  PROVIDER,
                  median(rcpu));
              double serveRatio = median(serveRatios);
              Arrays.sort(serveRatios);
              System.out.printf(
                  Locale.ROOT,
                  "  serving CPU ms/GiB (median): gRPC %.0f, %s %.0f; ratio %.3f (%.3f-%.3f)%n",
                  median(gserve),
                  PROVIDER,
                  median(rserve),
                  serveRatio,
                  serveRatios[0],
                  serveRatios[reps - 1]);
              double g = median(gs);
              double r = median(rs);
              Arrays.sort(ratios);
              System.out.printf(
                  Locale.ROOT,
                  "%-10d %-10s %-7d %-10.2f %-10.2f %-8.2f (%.2f-%.2f)%n",
                  rows,
                  human(batchBytes),
                  streams,
                  g,
                  r,
                  r / g,
                  ratios[0],
                  ratios[reps - 1]);
              lines.add(
                  String.format(
                      Locale.ROOT,
                      "%s,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,%.1f,%.4f,%.4f,%.4f",
                      mode,
                      rows,
                      batchBytes,
                      streams,
                      bytes,
                      reps,
                      g,
                      r,
                      r / g,
                      ratios[0],
                      ratios[reps - 1],
                      median(gserve),
                      median(rserve),
                      serveRatio,
                      serveRatios[0],
                      serveRatios[reps - 1]));
            }
          }
        }
        System.out.println("server (" + mode + "): " + rdmaProducer.stats());
        if (Boolean.getBoolean("memwire.bench.threadCpu")) {
          // Where the serving CPU went, over the whole producer (warm-up and both paths).
          java.util.Map<String, Long> byName = new java.util.TreeMap<>();
          for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (servingThread(t)) {
              byName.merge(
                  t.getName().replaceAll("-[0-9]+$", "-N"),
                  THREADS.getThreadCpuTime(t.getId()) / 1_000_000,
                  Long::sum);
            }
          }
          System.out.println("serving threads' CPU ms (" + mode + "): " + byName);
        }
        pool.shutdownNow();
        plainClient.close();
        wrappedClient.close();
        wrapped.shutdown();
        plain.shutdown();
        wrapped.awaitTermination();
        plain.awaitTermination();
        stopOwned(serverThreads);
        if (inPlace) {
          table.close();
          tableAlloc.close();
        }
        rdmaProducer.close();
        clientAlloc.close();
        serverAlloc.close();
      }
    }
    Files.createDirectories(csv.toAbsolutePath().getParent());
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
      lines.forEach(w::println);
    }
    System.out.println("wrote " + csv.toAbsolutePath());
  }

  private static double median(double[] v) {
    double[] c = v.clone();
    Arrays.sort(c);
    int n = c.length;
    return n % 2 == 1 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  }

  private static int[] ints(String csv) {
    return Arrays.stream(csv.split(",")).mapToInt(x -> Integer.parseInt(x.trim())).toArray();
  }

  private static String human(long bytes) {
    return bytes >= (1 << 20)
        ? String.format(Locale.ROOT, "%.1fMiB", bytes / 1048576.0)
        : String.format(Locale.ROOT, "%dKiB", bytes >> 10);
  }

  private static long grpc(FlightClient c, String ticket) throws Exception {
    long rows = 0;
    try (FlightStream s = c.getStream(new Ticket(ticket.getBytes(StandardCharsets.UTF_8)))) {
      while (s.next()) {
        rows += s.getRoot().getRowCount();
      }
    }
    return rows;
  }

  private static long rdma(RdmaFlightClient c, String ticket) {
    long rows = 0;
    try (RdmaFlightStream s = c.getStream(new Ticket(ticket.getBytes(StandardCharsets.UTF_8)))) {
      while (s.next()) {
        rows += s.getRoot().getRowCount();
      }
    }
    return rows;
  }

  private static long run(ExecutorService pool, int streams, Callable<Long> one) throws Exception {
    List<Future<Long>> fs = new ArrayList<>();
    for (int i = 0; i < streams; i++) {
      fs.add(pool.submit(one));
    }
    long rows = 0;
    for (Future<Long> f : fs) {
      rows += f.get();
    }
    return rows;
  }

  /** GB/s (10^9 bytes per second) of body bytes over all streams. */
  private static double measure(ExecutorService pool, int streams, Callable<Long> one, long bytes)
      throws Exception {
    long t0 = System.nanoTime();
    run(pool, streams, one);
    long ns = System.nanoTime() - t0;
    return bytes / (double) ns;
  }
}
