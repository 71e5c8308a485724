package io.memwire.shuffle.bench;

import io.memwire.localcluster.ExecutorCpu;
import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import io.memwire.shuffle.it.ServiceProcess;
import io.memwire.shuffle.metrics.MemwireMetricsPlugin;
import io.memwire.transfer.TransferConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;
import java.util.stream.Stream;
import org.apache.spark.FetchFailed;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.executor.ShuffleReadMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import scala.Tuple2;

/**
 * Reducers reading the outputs of released executors: Memwire's shuffle service (service mode,
 * one-sided reads over the tcp provider) against Spark's external shuffle service (Spark's sort
 * shuffle), on the same local-cluster[2,1,1024] with dynamic allocation, in the same run.
 *
 * <pre>mvn -B -q -pl shuffle-manager exec:exec@service-bench -Dservice-bench.bytes=256m</pre>
 *
 * <p>Each round runs both configurations, alternating which goes first; each starts its service JVM
 * and a fresh cluster. The job is a groupByKey of random 100-byte pairs. Its action runs once (map
 * and reduce stage); once dynamic allocation has released every executor, the same RDD's action
 * runs again: only the reduce stage runs, on new executors, and every block comes from the service.
 * That second action is measured: its wall time, split into executor start (action start to the
 * first task's launch) and the reduce phase (first launch to job end), the summed run time of its
 * tasks, their summed shuffle fetch wait, remote bytes, and the CPU the new executors and the
 * service JVM used (from {@code /proc}; less disturbed by other load than wall times). Prints each
 * round, the medians of each figure over rounds, and Memwire/ESS ratios (of the medians and per
 * round).
 *
 * <p>Fails loudly when a run did not measure what it claims: results differ between runs or
 * configurations, a stage was rerun, a fetch failed, the second action reused an executor of the
 * first, the ESS did not register the executors or serve the bytes, or Memwire's reducers read a
 * remote byte other than one-sided ({@link MemwireMetricsPlugin} totals).
 *
 * <p>Both configurations read through their transport ({@code spark.shuffle.readHostLocalDisk=
 * false}): on one host Spark would otherwise read the released executors' files from disk and there
 * would be no transfer to compare. Arguments: bytes (default 256m), rounds (3), settings for both
 * clusters {@code "key=value;key=value"}.
 */
public final class ServiceBenchmark {
  private static final String ESS = "spark-ess";
  private static final String MEMWIRE = "memwire";
  private static final int RECORD_BYTES = 100;
  private static final Duration RELEASE_TIMEOUT = Duration.ofSeconds(120);
  private static final Duration REPORT_TIMEOUT = Duration.ofSeconds(60);

  private ServiceBenchmark() {}

  /** What Spark reported about one action: task metrics, stages, failures, times. */
  static final class Recorder extends SparkListener {
    final AtomicLong firstLaunchMs = new AtomicLong(Long.MAX_VALUE);
    final AtomicLong jobEndMs = new AtomicLong();
    final AtomicLong runTimeMs = new AtomicLong();
    final AtomicLong fetchWaitMs = new AtomicLong();
    final AtomicLong remoteBytes = new AtomicLong();
    final AtomicInteger tasks = new AtomicInteger();
    final AtomicInteger failedTasks = new AtomicInteger();
    final AtomicInteger fetchFailures = new AtomicInteger();
    final AtomicInteger stagesSubmitted = new AtomicInteger();
    final AtomicInteger stageReruns = new AtomicInteger();
    final Set<String> executors = ConcurrentHashMap.newKeySet();

    @Override
    public void onTaskStart(SparkListenerTaskStart start) {
      firstLaunchMs.accumulateAndGet(start.taskInfo().launchTime(), Math::min);
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
      tasks.incrementAndGet();
      executors.add(end.taskInfo().executorId());
      if (end.reason() instanceof FetchFailed) {
        fetchFailures.incrementAndGet();
      }
      if (!end.taskInfo().successful()) {
        failedTasks.incrementAndGet();
      }
      if (end.taskMetrics() != null) {
        ShuffleReadMetrics read = end.taskMetrics().shuffleReadMetrics();
        runTimeMs.addAndGet(end.taskMetrics().executorRunTime());
        fetchWaitMs.addAndGet(read.fetchWaitTime());
        remoteBytes.addAndGet(read.remoteBytesRead());
      }
    }

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted s) {
      stagesSubmitted.incrementAndGet();
      if (s.stageInfo().attemptNumber() > 0) {
        stageReruns.incrementAndGet();
      }
    }

    @Override
    public void onJobEnd(SparkListenerJobEnd end) {
      jobEndMs.set(end.time());
    }

    void reset() {
      firstLaunchMs.set(Long.MAX_VALUE);
      jobEndMs.set(0);
      runTimeMs.set(0);
      fetchWaitMs.set(0);
      remoteBytes.set(0);
      tasks.set(0);
      failedTasks.set(0);
      fetchFailures.set(0);
      stagesSubmitted.set(0);
      stageReruns.set(0);
      executors.clear();
    }
  }

  /**
   * The second action of one configuration in one round (times in seconds): {@code wall} is {@code
   * executorStart} (until the first task launched) plus {@code reducePhase} (until the job ended)
   * plus the driver's own bookkeeping; {@code served} is what the service says it sent meanwhile.
   * CPU from {@code /proc}: {@code executorCpu} of the new executor JVMs from their start (their
   * start-up included), {@code serviceCpu} of the service JVM during the action.
   */
  record Run(
      String config,
      int round,
      double firstWall,
      double releaseWait,
      double wall,
      double executorStart,
      double reducePhase,
      double reduceTasks,
      long fetchWaitMs,
      long remoteBytes,
      long served,
      double executorCpu,
      double serviceCpu) {
    double cpu() {
      return executorCpu + serviceCpu;
    }
  }

  public static void main(String[] args) throws Exception {
    long bytes = TransferConfig.parseBytes(args.length > 0 ? args[0] : "256m");
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    Map<String, String> extra = ShuffleBenchmark.settings(args, 2);
    long records = bytes / RECORD_BYTES;
    int partitions = (int) Math.max(16, Math.min(32, bytes / (16L << 20)));
    System.out.printf(
        "service benchmark: groupByKey of %,d records of %d bytes (%,d MiB), %d maps x %d"
            + " reducers, %d rounds; load %s%n",
        records, RECORD_BYTES, bytes >> 20, partitions, partitions, rounds, loadAverage());
    System.out.println(
        "  local-cluster[2,1,1024], dynamic allocation 0..2 executors, idle timeout 2 s;"
            + " spark.shuffle.readHostLocalDisk=false in both (one host: Spark would otherwise"
            + " read the released executors' files from disk, and no transfer would be compared)");
    System.out.println(
        "  measured: the second action, after every executor was released (reduce stage only,"
            + " on new executors)");

    Map<String, List<Run>> runs = new LinkedHashMap<>();
    runs.put(ESS, new ArrayList<>());
    runs.put(MEMWIRE, new ArrayList<>());
    long[] reference = null;
    for (int round = 1; round <= rounds; round++) {
      // Alternate which goes first, so drift in machine load hits both alike.
      List<String> order = round % 2 == 1 ? List.of(ESS, MEMWIRE) : List.of(MEMWIRE, ESS);
      for (String config : order) {
        long[] check = new long[3];
        Run r = run(config, round, records, partitions, extra, check);
        if (reference == null) {
          reference = check;
        } else if (!Arrays.equals(reference, check)) {
          throw new IllegalStateException(
              "RESULT CHECK FAILED: "
                  + config
                  + " in round "
                  + round
                  + " gave "
                  + Arrays.toString(check)
                  + ", the first run "
                  + Arrays.toString(reference));
        }
        runs.get(config).add(r);
        print(r, check);
      }
    }
    summary(runs);
    System.out.printf("load at the end: %s%n", loadAverage());
  }

  /** One configuration in one round: its service JVM, a cluster, the action twice. */
  private static Run run(
      String config,
      int round,
      long records,
      int partitions,
      Map<String, String> extra,
      long[] checkOut)
      throws Exception {
    Path root = Files.createTempDirectory("memwire-service-bench");
    boolean ok = false;
    SparkShuffleServiceProcess ess = null;
    ServiceProcess memwire = null;
    try {
      Map<String, String> conf = new LinkedHashMap<>();
      conf.put("spark.serializer", "org.apache.spark.serializer.KryoSerializer");
      conf.put("spark.shuffle.readHostLocalDisk", "false");
      // Spelled out for dynamic allocation's executor count (local-cluster's Workers have 1).
      conf.put("spark.executor.cores", "1");
      conf.put("spark.dynamicAllocation.enabled", "true");
      conf.put("spark.dynamicAllocation.shuffleTracking.enabled", "false");
      conf.put("spark.dynamicAllocation.executorIdleTimeout", "2s");
      conf.put("spark.dynamicAllocation.schedulerBacklogTimeout", "1s");
      conf.put("spark.dynamicAllocation.minExecutors", "0");
      conf.put("spark.dynamicAllocation.initialExecutors", "2");
      conf.put("spark.dynamicAllocation.maxExecutors", "2");
      if (config.equals(ESS)) {
        ess = SparkShuffleServiceProcess.start(root.resolve("ess"));
        conf.put("spark.shuffle.manager", "sort");
        // local-cluster turns the service off for its Master and Workers only; executors take
        // the application's settings and register with this JVM.
        conf.put("spark.shuffle.service.enabled", "true");
        conf.put("spark.shuffle.service.port", String.valueOf(ess.port()));
      } else {
        memwire = ServiceProcess.start(root.resolve("memwire"), Map.of());
        conf.put("spark.shuffle.manager", RdmaShuffleManager.class.getName());
        conf.put(MemwireShuffleDataIO.PLUGIN_KEY, MemwireShuffleDataIO.CLASS_NAME);
        conf.put("spark.shuffle.rdma.service.socket", memwire.socket().toString());
        conf.put("spark.shuffle.rdma.provider", "tcp");
        conf.put("spark.plugins", MemwireMetricsPlugin.class.getName());
      }
      conf.putAll(extra);
      try (LocalSparkCluster cluster =
          LocalSparkCluster.builder()
              .executors(2)
              .coresPerExecutor(1)
              .memoryPerExecutorMb(1024)
              .appName("memwire-service-benchmark")
              .startupTimeout(Duration.ofSeconds(180))
              .workDir(root.resolve("cluster"))
              .conf(conf)
              .start()) {
        Recorder rec = new Recorder();
        cluster.sparkContext().addSparkListener(rec);
        JavaSparkContext jsc = cluster.javaSparkContext();
        String appId = cluster.sparkContext().applicationId();
        JavaRDD<long[]> job = groupByKey(jsc, records, partitions);

        long t0 = System.nanoTime();
        long[] first = action(job);
        double firstWall = (System.nanoTime() - t0) / 1e9;
        cluster.sparkContext().listenerBus().waitUntilEmpty(30_000);
        if (rec.failedTasks.get() > 0) {
          // Not measured; Spark retried them (an executor released as a task reached it).
          System.out.printf(
              "  %s round %d: %d failed tasks in the first action%n",
              config, round, rec.failedTasks.get());
        }
        Set<String> mapExecutors = new TreeSet<>(rec.executors);
        long firstRemote = rec.remoteBytes.get();
        if (memwire != null) {
          long taken = memwire.stats().getOrDefault("outputsTaken", 0L);
          require(
              taken == partitions,
              config,
              "the service took " + taken + " of " + partitions + " map outputs");
        }

        long released = System.nanoTime();
        awaitNoExecutors(cluster, config);
        double releaseWait = (System.nanoTime() - released) / 1e9;

        Map<String, Long> before = Map.of();
        long servedBefore;
        if (memwire != null) {
          MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), REPORT_TIMEOUT);
          before = MemwireMetricsPlugin.applicationTotals();
          servedBefore = memwire.stats().getOrDefault("node.servedBytes", 0L);
        } else {
          // The first action's reducers read through the ESS as well.
          servedBefore = ess.awaitBytesServed(firstRemote, Duration.ofSeconds(60));
        }

        long servicePid = ess != null ? ess.pid() : memwire.pid();
        rec.reset();
        ExecutorCpu.Snapshot cpu0 = ExecutorCpu.take();
        long serviceCpu0 = processCpuNanos(servicePid);
        long startMs = System.currentTimeMillis();
        t0 = System.nanoTime();
        long[] second = action(job);
        double wall = (System.nanoTime() - t0) / 1e9;
        // Before the idle timeout ends the executors: they are the ones that ran the action.
        double executorCpu = ExecutorCpu.take().since(cpu0).nanos(ExecutorCpu.Group.PROCESS) / 1e9;
        double serviceCpu = (processCpuNanos(servicePid) - serviceCpu0) / 1e9;
        cluster.sparkContext().listenerBus().waitUntilEmpty(30_000);

        require(Arrays.equals(first, second), config, "the two actions gave different results");
        require(
            rec.stagesSubmitted.get() == 1,
            config,
            rec.stagesSubmitted.get()
                + " stages ran in the second action, not only the reduce one");
        require(rec.stageReruns.get() == 0, config, "a stage was rerun");
        require(rec.fetchFailures.get() == 0, config, rec.fetchFailures + " fetch failures");
        require(rec.failedTasks.get() == 0, config, rec.failedTasks + " failed tasks");
        require(rec.tasks.get() == partitions, config, rec.tasks + " tasks in the second action");
        require(rec.remoteBytes.get() > 0, config, "the second action read no remote bytes");
        Set<String> reused = new HashSet<>(rec.executors);
        reused.retainAll(mapExecutors);
        require(
            reused.isEmpty(),
            config,
            "the second action ran on executors " + reused + " of the first, not released ones");

        long served;
        if (ess != null) {
          Set<String> expected = new TreeSet<>(mapExecutors);
          expected.addAll(rec.executors);
          Set<String> registered = ess.registeredExecutors(appId);
          require(
              registered.containsAll(expected),
              config,
              "executors " + expected + " ran tasks; the ESS log has only " + registered);
          long after =
              ess.awaitBytesServed(servedBefore + rec.remoteBytes.get(), Duration.ofSeconds(60));
          served = after - servedBefore;
          require(
              served >= rec.remoteBytes.get(),
              config,
              "the ESS sent "
                  + served
                  + " bytes during the second action, Spark read "
                  + rec.remoteBytes
                  + " remote");
        } else {
          MemwireMetricsPlugin.awaitExecutorTotals(cluster.sparkContext(), REPORT_TIMEOUT);
          Map<String, Long> after = MemwireMetricsPlugin.applicationTotals();
          checkOneSided(config, rec.remoteBytes.get(), before, after);
          served = memwire.stats().getOrDefault("node.servedBytes", 0L) - servedBefore;
          require(served > 0, config, "the service served no reads in the second action");
        }
        long firstLaunch = rec.firstLaunchMs.get();
        System.arraycopy(second, 0, checkOut, 0, checkOut.length);
        ok = true;
        return new Run(
            config,
            round,
            firstWall,
            releaseWait,
            wall,
            (firstLaunch - startMs) / 1e3,
            (rec.jobEndMs.get() - firstLaunch) / 1e3,
            rec.runTimeMs.get() / 1e3,
            rec.fetchWaitMs.get(),
            rec.remoteBytes.get(),
            served,
            executorCpu,
            serviceCpu);
      }
    } finally {
      if (ess != null) {
        ess.close();
      }
      if (memwire != null) {
        memwire.close();
      }
      if (ok) {
        deleteRecursively(root);
      } else {
        System.out.printf("  %s round %d failed; its logs stay in %s%n", config, round, root);
      }
    }
  }

  /**
   * Fails unless every remote byte of the second action was read one-sided: Memwire's one-sided
   * bytes grew by at least Spark's remote bytes, and no block fell back or failed.
   */
  private static void checkOneSided(
      String config, long remoteBytes, Map<String, Long> before, Map<String, Long> after) {
    long oneSided = delta(after, before, "oneSided.bytes");
    long fallback = delta(after, before, "fallback.blocks");
    long failed = delta(after, before, "failedBlocks");
    require(
        oneSided >= remoteBytes && fallback == 0 && failed == 0,
        config,
        "PATH CHECK: Spark read "
            + remoteBytes
            + " remote bytes, Memwire "
            + oneSided
            + " one-sided; "
            + fallback
            + " blocks fell back to Spark's transfer, "
            + failed
            + " failed");
  }

  private static long delta(Map<String, Long> after, Map<String, Long> before, String key) {
    return after.getOrDefault(key, 0L) - before.getOrDefault(key, 0L);
  }

  private static void require(boolean condition, String config, String what) {
    if (!condition) {
      throw new IllegalStateException("CHECK FAILED (" + config + "): " + what);
    }
  }

  /** Waits until dynamic allocation has released every executor. */
  private static void awaitNoExecutors(LocalSparkCluster cluster, String config)
      throws InterruptedException {
    long deadline = System.nanoTime() + RELEASE_TIMEOUT.toNanos();
    int left;
    while ((left = cluster.registeredExecutors()) > 0) {
      if (System.nanoTime() > deadline) {
        require(
            false,
            config,
            left + " executors still registered after " + RELEASE_TIMEOUT.toSeconds() + " s");
      }
      Thread.sleep(100);
    }
  }

  /**
   * groupByKey of the benchmark's random pairs, then per partition the number of groups, of values
   * and an order-independent hash of keys and values (the check that both services gave the same).
   */
  static JavaRDD<long[]> groupByKey(JavaSparkContext jsc, long records, int partitions) {
    return ShuffleBenchmark.input(jsc, records, partitions)
        .groupByKey(partitions)
        .mapPartitions(
            it -> {
              long groups = 0;
              long values = 0;
              long hash = 0;
              while (it.hasNext()) {
                Tuple2<Long, Iterable<byte[]>> g = it.next();
                groups++;
                for (byte[] v : g._2()) {
                  values++;
                  hash += g._1() * 0x9E3779B97F4A7C15L + Arrays.hashCode(v);
                }
              }
              return List.of(new long[] {groups, values, hash}).iterator();
            });
  }

  private static long[] action(JavaRDD<long[]> job) {
    return job.reduce((a, b) -> new long[] {a[0] + b[0], a[1] + b[1], a[2] + b[2]});
  }

  private static void print(Run r, long[] check) {
    System.out.printf(
        "  round %d %-9s first action %.2f s, executors released after %.1f s | second action:"
            + " wall %.2f s (executor start %.2f s, reduce phase %.2f s), reduce tasks %.2f s,"
            + " fetch wait %d ms, remote %.1f MiB, service sent %.1f MiB; CPU executors %.2f s,"
            + " service %.2f s (%d groups, %d values, hash %x)%n",
        r.round(),
        r.config(),
        r.firstWall(),
        r.releaseWait(),
        r.wall(),
        r.executorStart(),
        r.reducePhase(),
        r.reduceTasks(),
        r.fetchWaitMs(),
        r.remoteBytes() / 1048576.0,
        r.served() / 1048576.0,
        r.executorCpu(),
        r.serviceCpu(),
        check[0],
        check[1],
        check[2]);
  }

  private static void summary(Map<String, List<Run>> runs) {
    List<Run> ess = runs.get(ESS);
    List<Run> mw = runs.get(MEMWIRE);
    System.out.println();
    System.out.printf(
        "second action, medians over %d rounds (each figure's own median)%n", ess.size());
    System.out.printf(
        "%-10s %8s %13s %14s %14s %14s %11s %12s %12s%n",
        "service",
        "wall s",
        "exec start s",
        "reduce phase s",
        "reduce tasks s",
        "fetch wait ms",
        "remote MiB",
        "exec CPU s",
        "service CPU s");
    for (Map.Entry<String, List<Run>> e : runs.entrySet()) {
      List<Run> l = e.getValue();
      System.out.printf(
          "%-10s %8.2f %13.2f %14.2f %14.2f %14.0f %11.1f %12.2f %12.2f%n",
          e.getKey(),
          median(l, Run::wall),
          median(l, Run::executorStart),
          median(l, Run::reducePhase),
          median(l, Run::reduceTasks),
          median(l, Run::fetchWaitMs),
          median(l, r -> r.remoteBytes() / 1048576.0),
          median(l, Run::executorCpu),
          median(l, Run::serviceCpu));
    }
    System.out.printf(
        "ratio memwire/ess (medians): wall %.2f, wall without executor start (reduce phase) %.2f,"
            + " reduce tasks %.2f, fetch wait %.2f, CPU of executors and service %.2f%n",
        median(mw, Run::wall) / median(ess, Run::wall),
        median(mw, Run::reducePhase) / median(ess, Run::reducePhase),
        median(mw, Run::reduceTasks) / median(ess, Run::reduceTasks),
        median(mw, Run::fetchWaitMs) / median(ess, Run::fetchWaitMs),
        median(mw, Run::cpu) / median(ess, Run::cpu));
    for (int i = 0; i < ess.size(); i++) {
      Run e = ess.get(i);
      Run m = mw.get(i);
      System.out.printf(
          "  round %d memwire/ess: wall %.2f, reduce phase %.2f, reduce tasks %.2f,"
              + " fetch wait %.2f (%d vs %d ms), CPU %.2f%n",
          e.round(),
          m.wall() / e.wall(),
          m.reducePhase() / e.reducePhase(),
          m.reduceTasks() / e.reduceTasks(),
          e.fetchWaitMs() == 0 ? Double.NaN : (double) m.fetchWaitMs() / e.fetchWaitMs(),
          m.fetchWaitMs(),
          e.fetchWaitMs(),
          m.cpu() / e.cpu());
    }
  }

  /** utime + stime of a process from {@code /proc/<pid>/stat}, in nanoseconds (0 when unknown). */
  private static long processCpuNanos(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", pid + "/stat"), StandardCharsets.US_ASCII);
      // Fields after the command name (in parentheses, may hold spaces): state is field 3, so
      // utime (14) and stime (15) are the 12th and 13th.
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
      return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L; // USER_HZ is 100
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  private static double median(List<Run> runs, ToDoubleFunction<Run> f) {
    double[] v = runs.stream().mapToDouble(f).sorted().toArray();
    int n = v.length;
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

  /** The 1, 5 and 15 minute load averages, as {@code uptime} prints them. */
  private static String loadAverage() {
    try {
      String[] f =
          Files.readString(Path.of("/proc/loadavg"), StandardCharsets.US_ASCII).trim().split(" ");
      return f[0] + ", " + f[1] + ", " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  /** Best effort: a killed executor may still be closing its log in there. */
  private static void deleteRecursively(Path dir) {
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      System.out.printf("  could not delete %s: %s%n", dir, e);
    }
  }
}
