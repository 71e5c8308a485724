package io.memwire.shuffle.bench;

import io.memwire.localcluster.ExecutorCpu;
import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.transfer.TransferConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.category.DefaultCategoryDataset;

/**
 * How Memwire's cost grows with the work: the shuffle benchmark's groupByKey (and optionally its
 * sort) at a series of points, each a data size and a shape (maps x reducers), with Spark's sort
 * shuffle (Netty) and the RDMA manager (tcp on loopback) side by side, rounds alternating which
 * goes first. Per point and manager: wall time, fetch wait, CPU per GiB of remote bytes (serving,
 * transport, whole executors), and per executor the peak heap, the mapped shuffle files and
 * Memwire's peak registered bytes.
 *
 * <pre>
 * mvn -B -pl shuffle-manager exec:exec@scale-series [-Dseries.points=256m,1g,4g,8g,1g@2000x2000]
 * </pre>
 *
 * A point is {@code SIZE} (maps and reducers as the benchmark picks them: 4 to 64, one per 32 MiB)
 * or {@code SIZE@MAPSxREDUCERS}. Writes {@code runs.csv} (every run), {@code summary.csv} (medians
 * per point, ratios, figures per unit of work) and {@code scale-series.png} into {@code
 * target/scale-series/<time>/}.
 */
public final class ScaleSeries {
  private static final int RECORD_BYTES = 100;
  private static final double GIB = 1024.0 * 1024 * 1024;

  /** One point of the series. */
  record Point(String label, long bytes, int maps, int reducers) {
    static Point parse(String spec) {
      String s = spec.trim();
      int at = s.indexOf('@');
      long bytes = TransferConfig.parseBytes(at < 0 ? s : s.substring(0, at));
      if (at < 0) {
        int maps = (int) Math.max(4, Math.min(64, bytes / (32L << 20)));
        return new Point(s, bytes, maps, maps);
      }
      String[] shape = s.substring(at + 1).split("x");
      if (shape.length != 2) {
        throw new IllegalArgumentException("not SIZE@MAPSxREDUCERS: " + spec);
      }
      int maps = Integer.parseInt(shape[0]);
      int reducers = Integer.parseInt(shape[1]);
      if (maps < 1 || reducers < 1 || bytes / RECORD_BYTES < maps) {
        throw new IllegalArgumentException("bad point " + spec + ": too few records or tasks");
      }
      return new Point(s, bytes, maps, reducers);
    }

    long blocks() {
      return (long) maps * reducers;
    }
  }

  /** One job run at one point with one manager. */
  record Run(
      Point point,
      String job,
      String manager,
      int round,
      ShuffleBenchmark.Result result,
      ExecutorFootprint footprint) {}

  private ScaleSeries() {}

  public static void main(String[] args) throws IOException {
    List<Point> points = new ArrayList<>();
    for (String p : (args.length > 0 ? args[0] : "256m,1g,4g,8g,1g@2000x2000").split(",")) {
      points.add(Point.parse(p));
    }
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    List<String> jobs = List.of((args.length > 2 ? args[2] : "groupByKey").split(","));
    Map<String, String> bothConf = ShuffleBenchmark.settings(args, 3);
    Path out =
        Path.of(
            "target",
            "scale-series",
            LocalDateTime.now(java.time.ZoneOffset.UTC)
                .format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    Files.createDirectories(out);
    System.out.printf("scale series: %s, %d rounds, jobs %s -> %s%n", points, rounds, jobs, out);

    String rdma = RdmaShuffleManager.class.getName();
    List<Run> runs = new ArrayList<>();
    for (Point point : points) {
      for (int round = 0; round < rounds; round++) {
        List<String> order = round % 2 == 0 ? List.of("sort", rdma) : List.of(rdma, "sort");
        for (String manager : order) {
          runs.addAll(run(point, manager, bothConf, jobs, round));
          writeRuns(out.resolve("runs.csv"), runs);
        }
      }
    }
    List<String[]> summary = summary(points, jobs, runs);
    writeCsv(out.resolve("summary.csv"), summary);
    chart(out.resolve("scale-series.png"), points, jobs, runs);
    System.out.println();
    for (String[] row : summary) {
      System.out.println(String.join(",", row));
    }
  }

  /** One cluster with {@code manager} at {@code point}: a warm-up, then each job once. */
  private static List<Run> run(
      Point point, String manager, Map<String, String> conf, List<String> jobs, int round) {
    String label = manager.equals("sort") ? "netty" : "rdma";
    long records = point.bytes() / RECORD_BYTES;
    List<Run> out = new ArrayList<>();
    try (LocalSparkCluster cluster = ShuffleBenchmark.cluster(manager, conf)) {
      ShuffleBenchmark.Metrics metrics = new ShuffleBenchmark.Metrics();
      cluster.sparkContext().addSparkListener(metrics);
      JavaSparkContext jsc = cluster.javaSparkContext();
      int executors = cluster.executors();
      JavaPairRDD<Long, byte[]> input = ShuffleBenchmark.input(jsc, records, point.maps());
      ShuffleBenchmark.groupByKey(
          ShuffleBenchmark.input(jsc, Math.min(records, 200_000), 4), point.reducers());
      for (String job : jobs) {
        cluster.sparkContext().listenerBus().waitUntilEmpty(30_000);
        metrics.reset();
        ExecutorFootprint.resetPeaks(jsc, executors);
        boolean isRdma = label.equals("rdma");
        Map<String, Long> before = isRdma ? ShuffleBenchmark.readerStats(jsc) : Map.of();
        ExecutorCpu.Snapshot cpu0 = ExecutorCpu.take();
        long t0 = System.nanoTime();
        ShuffleBenchmark.Job shuffle =
            switch (job) {
              case "groupByKey" -> ShuffleBenchmark.groupByKeyJob(input, point.reducers());
              case "sort" -> ShuffleBenchmark.sortJob(input, point.reducers());
              default ->
                  throw new IllegalArgumentException("unknown job " + job + " (groupByKey, sort)");
            };
        shuffle.run();
        double wall = (System.nanoTime() - t0) / 1e9;
        ExecutorCpu.Snapshot cpu = ExecutorCpu.take().since(cpu0);
        cluster.sparkContext().listenerBus().waitUntilEmpty(30_000);
        // Read while the job's shuffle is still registered (reachable through the job).
        ExecutorFootprint footprint = ExecutorFootprint.max(ExecutorFootprint.read(jsc, executors));
        java.lang.ref.Reference.reachabilityFence(shuffle);
        if (isRdma) {
          ShuffleBenchmark.checkOneSided(
              job, metrics.remoteBytes.get(), before, ShuffleBenchmark.readerStats(jsc));
        }
        ShuffleBenchmark.Result r =
            ShuffleBenchmark.Result.of(
                wall,
                metrics.fetchWaitMs.get(),
                metrics.remoteBytes.get(),
                metrics.reduceTaskMs.get() / 1000.0,
                cpu);
        System.out.printf(
            "  %s %s %s round %d: %.2f s, fetch wait %d ms, remote %.1f MiB, %s%n",
            point.label(),
            label,
            job,
            round,
            wall,
            r.fetchWaitMs(),
            r.remoteBytes() / 1048576.0,
            footprint);
        out.add(new Run(point, job, label, round, r, footprint));
      }
      return out;
    } catch (RuntimeException | java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException(
          "scale series point " + point.label() + " with " + label + " failed", e);
    }
  }

  private static final String[] RUN_HEADER = {
    "point",
    "bytes",
    "maps",
    "reducers",
    "job",
    "manager",
    "round",
    "wall_s",
    "fetch_wait_ms",
    "remote_bytes",
    "serving_cpu_ms_per_gib",
    "transport_cpu_ms_per_gib",
    "executor_cpu_ms_per_gib",
    "jit_cpu_ms",
    "gc_cpu_ms",
    "heap_peak_bytes",
    "heap_after_gc_bytes",
    "mapped_shuffle_files",
    "registered_peak_bytes",
    "mapped_segments"
  };

  private static void writeRuns(Path file, List<Run> runs) throws IOException {
    List<String[]> rows = new ArrayList<>();
    rows.add(RUN_HEADER);
    for (Run run : runs) {
      ShuffleBenchmark.Result r = run.result();
      ExecutorFootprint f = run.footprint();
      rows.add(
          new String[] {
            run.point().label(),
            Long.toString(run.point().bytes()),
            Integer.toString(run.point().maps()),
            Integer.toString(run.point().reducers()),
            run.job(),
            run.manager(),
            Integer.toString(run.round()),
            fmt(r.wallSeconds()),
            Long.toString(r.fetchWaitMs()),
            Long.toString(r.remoteBytes()),
            fmt(r.perGiB(r.servingCpuNanos())),
            fmt(r.perGiB(r.transportCpuNanos())),
            fmt(r.perGiB(r.executorCpuNanos())),
            Long.toString(r.jitCpuNanos() / 1_000_000),
            Long.toString(r.gcCpuNanos() / 1_000_000),
            Long.toString(f.heapPeakBytes()),
            Long.toString(f.heapAfterGcBytes()),
            Long.toString(f.mappedShuffleFiles()),
            Long.toString(f.registeredPeakBytes()),
            Long.toString(f.mappedSegments())
          });
    }
    writeCsv(file, rows);
  }

  /**
   * Per point and job: medians of each manager and their ratios, plus the figures that must not
   * grow faster than the work, divided by it (registered peak per GiB of data, mapped files per map
   * output an executor holds, wall seconds per GiB).
   */
  static List<String[]> summary(List<Point> points, List<String> jobs, List<Run> runs) {
    List<String[]> rows = new ArrayList<>();
    rows.add(
        new String[] {
          "point",
          "job",
          "blocks",
          "netty_wall_s",
          "rdma_wall_s",
          "wall_ratio",
          "wall_ratio_min",
          "wall_ratio_max",
          "netty_fetch_wait_ms",
          "rdma_fetch_wait_ms",
          "netty_serving_ms_per_gib",
          "rdma_serving_ms_per_gib",
          "serving_cpu_ratio",
          "netty_transport_ms_per_gib",
          "rdma_transport_ms_per_gib",
          "transport_cpu_ratio",
          "netty_executor_ms_per_gib",
          "rdma_executor_ms_per_gib",
          "executor_cpu_ratio",
          "netty_jit_ms",
          "rdma_jit_ms",
          "netty_gc_ms",
          "rdma_gc_ms",
          "netty_heap_peak_mib",
          "rdma_heap_peak_mib",
          "netty_heap_after_gc_mib",
          "rdma_heap_after_gc_mib",
          "rdma_registered_peak_mib",
          "rdma_registered_peak_per_data_gib_mib",
          "rdma_mapped_files",
          "netty_mapped_files",
          "rdma_wall_s_per_gib"
        });
    for (Point p : points) {
      for (String job : jobs) {
        List<Run> netty = select(runs, p, job, "netty");
        List<Run> rdma = select(runs, p, job, "rdma");
        if (netty.isEmpty() || rdma.isEmpty()) {
          continue;
        }
        List<Double> ratios = new ArrayList<>();
        for (int i = 0; i < Math.min(netty.size(), rdma.size()); i++) {
          ratios.add(rdma.get(i).result().wallSeconds() / netty.get(i).result().wallSeconds());
        }
        double nWall = median(netty, r -> r.result().wallSeconds());
        double rWall = median(rdma, r -> r.result().wallSeconds());
        double nServ = median(netty, r -> r.result().perGiB(r.result().servingCpuNanos()));
        double rServ = median(rdma, r -> r.result().perGiB(r.result().servingCpuNanos()));
        double nTran = median(netty, r -> r.result().perGiB(r.result().transportCpuNanos()));
        double rTran = median(rdma, r -> r.result().perGiB(r.result().transportCpuNanos()));
        double nExec = median(netty, r -> r.result().perGiB(r.result().executorCpuNanos()));
        double rExec = median(rdma, r -> r.result().perGiB(r.result().executorCpuNanos()));
        double registered = median(rdma, r -> r.footprint().registeredPeakBytes());
        rows.add(
            new String[] {
              p.label(),
              job,
              Long.toString(p.blocks()),
              fmt(nWall),
              fmt(rWall),
              fmt(rWall / nWall),
              fmt(ratios.stream().mapToDouble(d -> d).min().orElse(Double.NaN)),
              fmt(ratios.stream().mapToDouble(d -> d).max().orElse(Double.NaN)),
              fmt(median(netty, r -> r.result().fetchWaitMs())),
              fmt(median(rdma, r -> r.result().fetchWaitMs())),
              fmt(nServ),
              fmt(rServ),
              fmt(rServ / nServ),
              fmt(nTran),
              fmt(rTran),
              fmt(rTran / nTran),
              fmt(nExec),
              fmt(rExec),
              fmt(rExec / nExec),
              fmt(median(netty, r -> r.result().jitCpuNanos() / 1e6)),
              fmt(median(rdma, r -> r.result().jitCpuNanos() / 1e6)),
              fmt(median(netty, r -> r.result().gcCpuNanos() / 1e6)),
              fmt(median(rdma, r -> r.result().gcCpuNanos() / 1e6)),
              fmt(median(netty, r -> r.footprint().heapPeakBytes()) / 1048576.0),
              fmt(median(rdma, r -> r.footprint().heapPeakBytes()) / 1048576.0),
              fmt(median(netty, r -> r.footprint().heapAfterGcBytes()) / 1048576.0),
              fmt(median(rdma, r -> r.footprint().heapAfterGcBytes()) / 1048576.0),
              fmt(registered / 1048576.0),
              fmt(registered / 1048576.0 / (p.bytes() / GIB)),
              fmt(median(rdma, r -> r.footprint().mappedShuffleFiles())),
              fmt(median(netty, r -> r.footprint().mappedShuffleFiles())),
              fmt(rWall / (p.bytes() / GIB))
            });
      }
    }
    return rows;
  }

  private static List<Run> select(List<Run> runs, Point p, String job, String manager) {
    return runs.stream()
        .filter(r -> r.point().equals(p) && r.job().equals(job) && r.manager().equals(manager))
        .sorted(Comparator.comparingInt(Run::round))
        .toList();
  }

  private static double median(List<Run> runs, ToDoubleFunction<Run> f) {
    double[] v = runs.stream().mapToDouble(f).sorted().toArray();
    if (v.length == 0) {
      return Double.NaN;
    }
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  /** Two panels' worth in one chart: RDMA/Netty ratios of wall time and CPU per GiB by point. */
  private static void chart(Path file, List<Point> points, List<String> jobs, List<Run> runs)
      throws IOException {
    DefaultCategoryDataset data = new DefaultCategoryDataset();
    for (String job : jobs) {
      for (Point p : points) {
        List<Run> netty = select(runs, p, job, "netty");
        List<Run> rdma = select(runs, p, job, "rdma");
        if (netty.isEmpty() || rdma.isEmpty()) {
          continue;
        }
        data.addValue(
            median(rdma, r -> r.result().wallSeconds())
                / median(netty, r -> r.result().wallSeconds()),
            job + " wall",
            p.label());
        data.addValue(
            median(rdma, r -> r.result().perGiB(r.result().servingCpuNanos()))
                / median(netty, r -> r.result().perGiB(r.result().servingCpuNanos())),
            job + " serving CPU/GiB",
            p.label());
        data.addValue(
            median(rdma, r -> r.result().perGiB(r.result().executorCpuNanos()))
                / median(netty, r -> r.result().perGiB(r.result().executorCpuNanos())),
            job + " executor CPU/GiB",
            p.label());
      }
    }
    JFreeChart chart =
        ChartFactory.createLineChart(
            "Memwire (tcp) / Spark's Netty shuffle, by point (1.0 = equal)",
            "point (data size, or size@maps x reducers)",
            "ratio",
            data,
            PlotOrientation.VERTICAL,
            true,
            false,
            false);
    ChartUtils.saveChartAsPNG(file.toFile(), chart, 1000, 560);
  }

  private static void writeCsv(Path file, List<String[]> rows) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
      for (String[] row : rows) {
        w.println(String.join(",", row));
      }
    }
  }

  private static String fmt(double v) {
    return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.3f", v);
  }
}
