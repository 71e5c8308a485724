package io.memwire.tools.bench;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.Connection;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.MemoryAllocator;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * Read throughput of the transport against the raw socket limit, measured in one run on the same
 * machine: for each block size and queue depth, Memwire's one-sided reads ({@link TransferNode})
 * and the same request/response exchange over plain blocking sockets ({@link RawSocketBaseline}),
 * plus one-way streaming as the absolute ceiling, and the CPU the serving node's threads spent per
 * GiB served. Prints a table and writes CSV. Compare tcp's two ways of serving a file region by
 * running {@code --region file} with and without {@code -Dmemwire.tcp.sendfileMinBytes=0}.
 *
 * <pre>
 * java -cp ... io.memwire.tools.bench.TransferBenchmark [--provider tcp|verbs|auto]
 *     [--bind 127.0.0.1] [--sizes 4k,64k,256k,1m,4m] [--depths 1,8,64] [--seconds 2]
 *     [--repeat 3] [--region direct|file] [--no-raw] [--csv target/bench/transfer.csv]
 * </pre>
 */
public final class TransferBenchmark {
  /** Name of the benchmark's child of the serving node's registered-memory root. */
  static final String ALLOCATOR = "transfer-benchmark";

  /** One measured point. */
  static final class Point {
    final int size;
    final int depth;
    final double memwireMBps;
    final double rawMBps;
    final double streamMBps;

    /** CPU of the serving node's threads per GiB served (ms); NaN where not measurable. */
    final double servingCpuMsPerGiB;

    Point(
        int size, int depth, double memwire, double raw, double stream, double servingCpuMsPerGiB) {
      this.size = size;
      this.depth = depth;
      this.memwireMBps = memwire;
      this.rawMBps = raw;
      this.streamMBps = stream;
      this.servingCpuMsPerGiB = servingCpuMsPerGiB;
    }

    double ratio() {
      return rawMBps > 0 ? memwireMBps / rawMBps : Double.NaN;
    }
  }

  private TransferBenchmark() {}

  public static void main(String[] args) throws Exception {
    ProviderKind provider = ProviderKind.TCP;
    String bind = "127.0.0.1";
    List<Integer> sizes = parseSizes("4k,64k,256k,1m,4m");
    List<Integer> depths = List.of(1, 8, 64);
    double seconds = 2;
    int repeat = 3;
    boolean raw = true;
    boolean fileRegion = false;
    Path csv = Paths.get("target", "bench", "transfer.csv");
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--provider" -> provider = ProviderKind.parse("--provider", args[++i]);
        case "--bind" -> bind = args[++i];
        case "--sizes" -> sizes = parseSizes(args[++i]);
        case "--depths" -> depths = parseInts(args[++i]);
        case "--seconds" -> seconds = Double.parseDouble(args[++i]);
        case "--repeat" -> repeat = Integer.parseInt(args[++i]);
        case "--region" -> fileRegion = "file".equals(args[++i]);
        case "--no-raw" -> raw = false;
        case "--csv" -> csv = Paths.get(args[++i]);
        case "--help", "-h" -> {
          System.out.println(
              "usage: TransferBenchmark [--provider tcp|verbs|auto] [--bind IP]"
                  + " [--sizes 4k,64k,...] [--depths 1,8,64] [--seconds S] [--repeat N]"
                  + " [--region direct|file]"
                  + " [--no-raw] [--csv FILE]");
          return;
        }
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    io.memwire.transfer.fabric.FabricWindow fabric = io.memwire.transfer.fabric.FabricWindow.open();
    List<Point> points =
        run(
            TransferNode::start,
            provider,
            bind,
            sizes,
            depths,
            seconds,
            repeat,
            raw,
            fileRegion,
            System.out);
    writeCsv(csv, provider, points);
    System.out.println("CSV written to " + csv.toAbsolutePath());
    // The NICs' own counters over the run, beside the figures.
    fabric.lines().forEach(System.out::println);
  }

  /**
   * Measures every size and depth against a serving node {@code startServer} starts (tests keep it,
   * to check its books after the run).
   */
  static List<Point> run(
      Function<TransferConfig, TransferNode> startServer,
      ProviderKind provider,
      String bind,
      List<Integer> sizes,
      List<Integer> depths,
      double seconds,
      int repeat,
      boolean raw,
      boolean fileRegion,
      PrintStream out)
      throws Exception {
    int maxSize = sizes.stream().mapToInt(Integer::intValue).max().orElse(1 << 20);
    int maxDepth = depths.stream().mapToInt(Integer::intValue).max().orElse(1);
    int regionSize = Math.max(64 << 20, maxSize * 4);
    TransferConfigBuilder base = TransferConfig.builder().provider(provider).bindAddress(bind);
    TransferConfig clientConfig =
        base.maxOutstandingRequests(Math.max(maxDepth, 1))
            .maxTransferSize(Math.min(Math.max(maxSize, 1 << 20), 64 << 20))
            .maxOutstandingBytes(Math.min(1L << 30, Math.max(64L << 20, (long) maxSize * maxDepth)))
            .poolMaxBytes(Math.min(1L << 30, Math.max(256L << 20, (long) maxSize * maxDepth * 2)))
            .build();
    List<Point> points = new ArrayList<>();
    Path file = null;
    // The serving node's threads are those its start adds (tcp: its I/O loops): their CPU per
    // GiB is what serving costs (over verbs the serving side's threads do no work per read).
    Set<Long> existing = ThreadCpu.liveThreadIds();
    try (TransferNode server = startServer.apply(base.build())) {
      ThreadCpu serving = ThreadCpu.startedSince(existing);
      // The pattern is the node's memory on the benchmark's books (registered when it is the
      // region served), released below and freed by the node.
      MemoryAllocator books = server.memory().newChild(ALLOCATOR);
      BufferUnit memory =
          fileRegion
              ? server.allocateDirect(books, regionSize, "benchmark pattern")
              : server.allocateRegistered(books, regionSize, "benchmark region");
      ByteBuffer pattern = memory.buffer();
      for (int i = 0; i < regionSize; i += 8) {
        pattern.putLong(i, i * 0x9E3779B97F4A7C15L);
      }
      MemoryRegion region = memory.region();
      try (TransferNode client = TransferNode.start(clientConfig);
          RawSocketBaseline baseline = raw ? new RawSocketBaseline(bind, pattern) : null) {
        if (fileRegion) {
          file = Files.createTempFile("memwire-bench", ".bin");
          try (var ch =
              java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(pattern.duplicate().clear());
          }
          region = server.register(file, 0, regionSize, books);
        }
        out.printf(
            Locale.ROOT,
            "Memwire transfer benchmark: provider %s (%s), %s region, "
                + "median of %d x %.1f s per point%n",
            server.provider(),
            server.selectionReason(),
            fileRegion ? "file" : "direct",
            repeat,
            seconds);
        out.printf(
            Locale.ROOT,
            "%8s %6s %14s %14s %8s %14s %16s%n",
            "size",
            "depth",
            "memwire MB/s",
            "raw MB/s",
            "ratio",
            "stream MB/s",
            "serving ms/GiB");
        Connection c = client.connection(server.localAddress());
        for (int size : sizes) {
          double stream = baseline != null ? baseline.stream(size, seconds) : Double.NaN;
          for (int depth : depths) {
            var unused = measure(c, region.remote(), size, depth, seconds / 4); // warm-up
            // Alternate the two so machine noise hits both alike; report medians.
            double[] mws = new double[repeat];
            double[] rws = new double[repeat];
            double[] cpu = new double[repeat];
            for (int r = 0; r < repeat; r++) {
              long cpu0 = serving.nanos();
              Measured m = measure(c, region.remote(), size, depth, seconds);
              long cpu1 = serving.nanos();
              mws[r] = m.mbps();
              cpu[r] = ThreadCpu.msPerGiB(cpu0 < 0 ? -1 : cpu1 - cpu0, m.bytes());
              rws[r] =
                  baseline != null ? baseline.requestResponse(size, depth, seconds) : Double.NaN;
            }
            double mw = median(mws);
            double rw = median(rws);
            Point p = new Point(size, depth, mw, rw, stream, median(cpu));
            points.add(p);
            out.printf(
                Locale.ROOT,
                "%8s %6d %14.1f %14.1f %8.2f %14.1f %16.1f%n",
                human(size),
                depth,
                mw,
                rw,
                p.ratio(),
                stream,
                p.servingCpuMsPerGiB);
          }
        }
      } finally {
        if (fileRegion && region != null) {
          region.close();
        }
        memory.release();
        books.close();
      }
    } finally {
      if (file != null) {
        Files.deleteIfExists(file);
      }
    }
    return points;
  }

  /** What one measurement read: its rate and its bytes. */
  record Measured(double mbps, long bytes) {}

  /** MB/s of {@code size}-byte reads with {@code depth} in flight on one connection. */
  static Measured measure(Connection c, RemoteRegion region, int size, int depth, double seconds)
      throws Exception {
    Semaphore slots = new Semaphore(depth);
    AtomicLong bytes = new AtomicLong();
    AtomicReference<Throwable> error = new AtomicReference<>();
    long slotsInRegion = region.length() / size;
    long start = System.nanoTime();
    long end = start + (long) (seconds * 1e9);
    long i = 0;
    while (System.nanoTime() < end && error.get() == null) {
      if (!slots.tryAcquire(1, TimeUnit.SECONDS)) {
        continue;
      }
      long offset = (i++ % slotsInRegion) * size;
      var unused =
          c.read(ReadRequest.of(region, offset, size))
              .whenComplete(
                  (b, e) -> {
                    if (e != null) {
                      error.compareAndSet(null, e);
                    } else {
                      bytes.addAndGet(b.length());
                      b.release();
                    }
                    slots.release();
                  });
    }
    if (!slots.tryAcquire(depth, 60, TimeUnit.SECONDS)) {
      throw new IllegalStateException("reads did not drain within 60 s");
    }
    double elapsed = (System.nanoTime() - start) / 1e9;
    if (error.get() != null) {
      throw new IllegalStateException("benchmark read failed", error.get());
    }
    return new Measured(bytes.get() / elapsed / 1e6, bytes.get());
  }

  static double median(double[] v) {
    double[] s = v.clone();
    java.util.Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  static void writeCsv(Path csv, ProviderKind provider, List<Point> points) throws IOException {
    if (csv.getParent() != null) {
      Files.createDirectories(csv.getParent());
    }
    StringBuilder sb =
        new StringBuilder(
            "provider,size_bytes,queue_depth,memwire_mb_s,raw_socket_mb_s,ratio,raw_stream_mb_s,"
                + "serving_cpu_ms_per_gib\n");
    for (Point p : points) {
      sb.append(
          String.format(
              Locale.ROOT,
              "%s,%d,%d,%.1f,%.1f,%.3f,%.1f,%.1f%n",
              provider,
              p.size,
              p.depth,
              p.memwireMBps,
              p.rawMBps,
              p.ratio(),
              p.streamMBps,
              p.servingCpuMsPerGiB));
    }
    Files.writeString(csv, sb.toString());
  }

  static List<Integer> parseSizes(String s) {
    List<Integer> out = new ArrayList<>();
    for (String part : s.split(",")) {
      out.add(Math.toIntExact(TransferConfig.parseBytes(part)));
    }
    return out;
  }

  static List<Integer> parseInts(String s) {
    List<Integer> out = new ArrayList<>();
    for (String part : s.split(",")) {
      out.add(Integer.parseInt(part.trim()));
    }
    return out;
  }

  static String human(int size) {
    if (size >= 1 << 20 && size % (1 << 20) == 0) {
      return (size >> 20) + "M";
    }
    if (size >= 1 << 10 && size % (1 << 10) == 0) {
      return (size >> 10) + "K";
    }
    return String.valueOf(size);
  }
}
