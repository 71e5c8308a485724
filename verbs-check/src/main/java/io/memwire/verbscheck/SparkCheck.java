package io.memwire.verbscheck;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.mainjob.RandomRecords;
import io.memwire.mainjob.ShuffleApp;
import io.memwire.mainjob.ShuffleAppResult;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.compat.ScalaCollections;
import io.memwire.shuffle.metrics.EveryExecutor;
import io.memwire.shuffle.metrics.ManagerCounters;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.storage.BlockManagerId;
import scala.Tuple2;
import scala.reflect.ClassTag$;

/**
 * Spark over the verbs provider, in one driver JVM: the same jobs on a 2-executor {@code
 * local-cluster} with Spark's sort shuffle (the reference), with Memwire over verbs and with
 * Memwire over tcp; results compared exactly; the managers' counters read from every executor; 50
 * shuffles with {@code unregisterShuffle} checked for leaked memory regions and queue pairs; the
 * serving executor's CPU time while the other reads from it; an executor killed while the other
 * reads from it.
 *
 * <pre>
 * SparkCheck --out FILE --bind IP --libdisni DIR [--modes sort,verbs,tcp] [--startup-minutes N]
 *            [--leak-rounds N] [--no-faults] [--reference FILE]
 * </pre>
 *
 * <p>{@code --reference} takes the sort-shuffle digests from an earlier run's result file, so a
 * later run (e.g. {@code --modes tcp}) is compared without running the sort shuffle again.
 *
 * <p>Writes {@code key=value} lines to FILE as it goes (a crash leaves what was measured); keys
 * {@code check.NAME=PASS|FAIL} are the verdicts, the others figures. Exit status 0 when every check
 * passed.
 */
public final class SparkCheck {
  private static final String MANAGER = RdmaShuffleManager.class.getName();

  private final Path out;
  private final String bind;
  private final String libdisni;
  private final Duration startup;
  private final int leakRounds;
  private final boolean faults;
  private final Map<String, String> reference = new HashMap<>();
  private int failures;

  private SparkCheck(
      Path out, String bind, String libdisni, Duration startup, int leakRounds, boolean faults) {
    this.out = out;
    this.bind = bind;
    this.libdisni = libdisni;
    this.startup = startup;
    this.leakRounds = leakRounds;
    this.faults = faults;
  }

  public static void main(String[] args) throws Exception {
    Path out = null;
    String bind = null;
    String lib = null;
    List<String> modes = List.of("sort", "verbs", "tcp");
    int startupMinutes = 20;
    int leakRounds = 50;
    boolean faults = true;
    Path reference = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out" -> out = Paths.get(args[++i]);
        case "--bind" -> bind = args[++i];
        case "--libdisni" -> lib = args[++i];
        case "--modes" -> modes = Arrays.asList(args[++i].split(","));
        case "--startup-minutes" -> startupMinutes = Integer.parseInt(args[++i]);
        case "--leak-rounds" -> leakRounds = Integer.parseInt(args[++i]);
        case "--no-faults" -> faults = false;
        case "--reference" -> reference = Paths.get(args[++i]);
        default ->
            throw new IllegalArgumentException(
                "unknown argument "
                    + args[i]
                    + "; usage: "
                    + "SparkCheck --out FILE --bind IP --libdisni DIR [--modes sort,verbs,tcp] "
                    + "[--startup-minutes N] [--leak-rounds N] [--no-faults] [--reference FILE]");
      }
    }
    if (out == null || bind == null || lib == null) {
      throw new IllegalArgumentException("--out, --bind and --libdisni are required");
    }
    for (String m : modes) {
      if (!List.of("sort", "verbs", "tcp").contains(m)) {
        throw new IllegalArgumentException("--modes: unknown mode " + m + " (sort, verbs, tcp)");
      }
    }
    SparkCheck check =
        new SparkCheck(out, bind, lib, Duration.ofMinutes(startupMinutes), leakRounds, faults);
    if (reference != null) {
      // Digests of an earlier sort-shuffle run of the same jobs ("sort.job.NAME.digest=...").
      for (String line : Files.readAllLines(reference)) {
        if (line.startsWith("sort.job.") && line.contains(".digest=")) {
          check.reference.put(
              line.substring(9, line.indexOf(".digest=")), line.substring(line.indexOf('=') + 1));
        }
      }
    }
    Files.writeString(out, "");
    for (String mode : modes) {
      check.runMode(mode);
    }
    check.put("sparkCheck." + String.join("+", modes) + ".failures", check.failures);
    System.out.println("spark-check failures=" + check.failures);
    System.exit(check.failures == 0 ? 0 : 1);
  }

  // ------------------------------------------------------------------ results

  private synchronized void put(String key, Object value) {
    String line = key + "=" + String.valueOf(value).replace('\n', ' ') + "\n";
    System.out.print("spark-check " + line);
    try {
      Files.writeString(out, line, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private void verdict(String name, boolean ok, String detail) {
    put("check." + name, ok ? "PASS" : "FAIL");
    if (detail != null && !detail.isEmpty()) {
      put("detail." + name, detail);
    }
    if (!ok) {
      failures++;
    }
  }

  private interface Step {
    void run() throws Exception;
  }

  /** Runs one step; an exception is that step's failure, not the end of the whole check. */
  private void step(String name, Step s) {
    long t0 = System.nanoTime();
    try {
      s.run();
    } catch (Throwable e) {
      e.printStackTrace();
      verdict(name, false, e.toString());
    } finally {
      put("seconds." + name, String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    }
  }

  // ------------------------------------------------------------------ one cluster

  private void runMode(String mode) {
    LocalSparkCluster[] holder = new LocalSparkCluster[1];
    step(
        mode + ".start",
        () -> {
          holder[0] = start(mode);
          verdict(mode + ".start", true, null);
        });
    LocalSparkCluster cluster = holder[0];
    if (cluster == null) {
      if (!mode.equals("sort")) {
        verdict("spark." + mode, false, "cluster did not start");
      }
      return;
    }
    JavaSparkContext jsc = cluster.javaSparkContext();
    Map<String, Long> pids = new TreeMap<>();
    try {
      step(
          mode + ".pids",
          () ->
              pids.putAll(
                  EveryExecutor.run(
                          jsc,
                          2,
                          EXECUTOR_WAIT,
                          id -> String.valueOf(ProcessHandle.current().pid()))
                      .entrySet()
                      .stream()
                      .collect(
                          Collectors.toMap(Map.Entry::getKey, e -> Long.parseLong(e.getValue())))));
      put(mode + ".executorPids", pids);
      if (!mode.equals("sort")) {
        step(
            mode + ".transport",
            () -> {
              Map<String, String> d =
                  EveryExecutor.run(
                      jsc,
                      2,
                      EXECUTOR_WAIT,
                      id -> {
                        RdmaShuffleManager m = RdmaShuffleManager.current();
                        if (m == null) {
                          return "no manager";
                        }
                        // On Spark 3.5 the transport starts at first use: start it here.
                        m.startForTesting();
                        return m.transportDescription();
                      });
              put(mode + ".transportDescription", d);
              boolean ok = d.values().stream().allMatch(s -> s.startsWith(mode + ":"));
              verdict(mode + ".transport", ok, ok ? null : "executors run " + d);
            });
      }
      Map<String, Map<String, Long>> before = mode.equals("sort") ? Map.of() : stats(jsc);
      for (Job job : jobs()) {
        step(
            mode + ".job." + job.name,
            () -> {
              long t0 = System.nanoTime();
              String digest = job.run(cluster.session(), jsc);
              put(
                  mode + ".job." + job.name + ".wallSeconds",
                  String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
              put(mode + ".job." + job.name + ".digest", digest);
              if (mode.equals("sort")) {
                reference.put(job.name, digest);
              } else {
                String want = reference.get(job.name);
                verdict(
                    mode + ".job." + job.name,
                    digest.equals(want),
                    want == null
                        ? "no sort-shuffle reference"
                        : "got " + digest + ", sort gave " + want);
              }
            });
      }
      if (!mode.equals("sort")) {
        step(
            mode + ".counters",
            () -> {
              Map<String, Map<String, Long>> after = stats(jsc);
              long rdma = sum(after, "rdmaBlocks") - sum(before, "rdmaBlocks");
              long fallback = sum(after, "fallbackBlocks") - sum(before, "fallbackBlocks");
              long failed = sum(after, "failedBlocks") - sum(before, "failedBlocks");
              long bytes = sum(after, "rdmaBytes") - sum(before, "rdmaBytes");
              put(mode + ".rdmaBlocks", rdma);
              put(mode + ".rdmaBytes", bytes);
              put(mode + ".fallbackBlocks", fallback);
              put(mode + ".failedBlocks", failed);
              put(mode + ".executorStats", after);
              verdict(
                  mode + ".counters",
                  rdma > 0 && fallback == 0 && failed == 0,
                  "one-sided blocks "
                      + rdma
                      + ", fallback blocks "
                      + fallback
                      + ", failed "
                      + failed);
            });
        step(mode + ".servingCpu", () -> servingCpu(mode, jsc, pids));
      }
      if (mode.equals("verbs")) {
        step("verbs.leakLoop", () -> leakLoop(jsc, pids));
        if (faults) {
          step("verbs.executorKilled", () -> executorKilled(jsc, pids));
        }
      }
    } finally {
      long t0 = System.nanoTime();
      cluster.close();
      put(
          mode + ".closeSeconds",
          String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    }
    if (mode.equals("verbs")) {
      step("verbs.resourcesAfterExit", () -> resourcesAfterExit(pids));
    }
  }

  private LocalSparkCluster start(String mode) {
    LocalSparkCluster.Builder b =
        LocalSparkCluster.builder()
            .executors(2)
            .coresPerExecutor(1)
            .memoryPerExecutorMb(768)
            .appName("memwire-verbs-check-" + mode)
            .startupTimeout(startup)
            .conf("spark.shuffle.readHostLocalDisk", "false")
            .conf("spark.sql.shuffle.partitions", "8")
            // Emulated CPUs: everything is slow, nothing may time out for that reason alone.
            .conf("spark.network.timeout", "900s")
            .conf("spark.executor.heartbeatInterval", "60s")
            .conf("spark.rpc.askTimeout", "900s")
            .conf("spark.storage.blockManagerHeartbeatTimeoutMs", "900000")
            .conf("spark.locality.wait", "60s")
            .conf("spark.shuffle.io.maxRetries", "1")
            .conf("spark.shuffle.io.retryWait", "1s")
            .conf(
                "spark.executor.extraJavaOptions",
                "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED -XX:TieredStopAtLevel=1")
            .conf("spark.executor.extraLibraryPath", libdisni);
    if (mode.equals("sort")) {
      b.conf("spark.shuffle.manager", "sort");
    } else {
      b.conf("spark.shuffle.manager", MANAGER)
          .conf("spark.shuffle.rdma.provider", mode)
          .conf("spark.shuffle.rdma.fallback", "false")
          .conf("spark.shuffle.rdma.connectTimeout", "300s")
          .conf("spark.shuffle.rdma.readTimeout", "600s");
      if (mode.equals("verbs")) {
        b.conf("spark.shuffle.rdma.bindAddress", bind);
      }
    }
    long t0 = System.nanoTime();
    LocalSparkCluster c = b.start();
    put(mode + ".startSeconds", String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    return c;
  }

  // ------------------------------------------------------------------ jobs

  private record Job(String name, JobBody body) {
    String run(SparkSession s, JavaSparkContext jsc) throws Exception {
      return body.run(s, jsc);
    }
  }

  private interface JobBody {
    String run(SparkSession s, JavaSparkContext jsc) throws Exception;
  }

  private List<Job> jobs() {
    return List.of(
        new Job(
            "shuffleApp",
            (s, jsc) -> {
              Path f = Files.createTempFile("shuffle-app", ".json");
              ShuffleApp.run(s, 20_000, 2_000, 100, 4, 8, f);
              String digest = ShuffleAppResult.read(f).resultDigest();
              Files.delete(f);
              return digest;
            }),
        new Job(
            "groupByKey100KiB",
            (s, jsc) ->
                digest(
                    bigValues(jsc, 4, 40)
                        .groupByKey(8)
                        .mapToPair(
                            t -> {
                              long n = 0;
                              long h = 0;
                              for (byte[] v : t._2()) {
                                n++;
                                h += mix(Arrays.hashCode(v));
                              }
                              return new Tuple2<>(t._1(), n * 1_000_003L + h);
                            })
                        .collect())),
        new Job(
            "partitions2100",
            (s, jsc) -> {
              // More than 2000 reduce partitions: Spark switches to HighlyCompressedMapStatus; AQE
              // coalesces them into a few tasks that each read a range of partitions.
              s.conf().set("spark.sql.shuffle.partitions", "2100");
              try {
                Dataset<Row> df =
                    s.range(0, 60_000, 1, 4)
                        .withColumn("k", functions.expr("id % 3000"))
                        .groupBy("k")
                        .agg(functions.count("id"), functions.sum("id"));
                List<Tuple2<Long, Long>> rows =
                    df.javaRDD()
                        .map(
                            r ->
                                new Tuple2<>(
                                    r.getLong(0), r.getLong(1) * 1_000_003L + r.getLong(2)))
                        .collect();
                return digest(rows);
              } finally {
                s.conf().set("spark.sql.shuffle.partitions", "8");
              }
            }),
        new Job(
            "sortMergeJoinAqe",
            (s, jsc) -> {
              s.conf().set("spark.sql.autoBroadcastJoinThreshold", "-1");
              s.conf().set("spark.sql.adaptive.enabled", "true");
              try {
                Dataset<Row> a = s.range(0, 40_000, 1, 4).selectExpr("id % 7000 as k", "id as v");
                Dataset<Row> b =
                    s.range(0, 20_000, 1, 3).selectExpr("id % 5000 as k", "id * 3 as w");
                Dataset<Row> j = a.join(b, "k");
                List<Tuple2<Long, Long>> rows =
                    j.javaRDD()
                        .map(
                            r ->
                                new Tuple2<>(
                                    r.getLong(0), mix(r.getLong(1)) + 31 * mix(r.getLong(2))))
                        .collect();
                String plan = j.queryExecution().executedPlan().toString();
                if (!plan.contains("SortMergeJoin")) {
                  throw new IllegalStateException("the join was not a sort-merge join: " + plan);
                }
                return digest(rows);
              } finally {
                s.conf().unset("spark.sql.autoBroadcastJoinThreshold");
              }
            }));
  }

  /** maps x perMap records of 100 KiB, keys 0..15 in turn, bytes fixed by (map, index). */
  private static JavaPairRDD<Long, byte[]> bigValues(JavaSparkContext jsc, int maps, int perMap) {
    return new RandomRecords(maps, perMap, 100 * 1024, 1, 7919, RandomRecords.keysInTurn(16))
        .rdd(jsc);
  }

  /** Row count and an order-independent hash of (key, value) rows. */
  private static String digest(List<Tuple2<Long, Long>> rows) {
    long h = 0;
    for (Tuple2<Long, Long> t : rows) {
      h += mix(t._1() * 0x9E3779B97F4A7C15L ^ mix(t._2()));
    }
    return rows.size() + ":" + Long.toHexString(h);
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  // ------------------------------------------------------------------ leaks

  /**
   * 50 (by default) shuffles, each unregistered with {@code ContextCleaner.doCleanupShuffle}
   * (blocking), must leave every executor's registrations and queue pairs where they were after the
   * first one by the provider's counters, and no more of them by {@code rdma resource show}.
   */
  private void leakLoop(JavaSparkContext jsc, Map<String, Long> pids) throws Exception {
    // Unregister every earlier shuffle first, so the baseline is not lowered later by the
    // ContextCleaner removing the jobs' shuffles while the loop runs (seen in the first run).
    int next = jsc.sc().newShuffleId();
    for (int id = 0; id < next; id++) {
      jsc.sc().cleaner().get().doCleanupShuffle(id, true);
    }
    smallShuffleAndUnregister(jsc, 0);
    Map<String, Map<String, Long>> s0 = stats(jsc);
    Map<String, int[]> r0 = rdmaResources(pids);
    for (int i = 1; i <= leakRounds; i++) {
      smallShuffleAndUnregister(jsc, i);
    }
    Map<String, Map<String, Long>> s1 = stats(jsc);
    Map<String, int[]> r1 = rdmaResources(pids);
    StringBuilder d = new StringBuilder();
    boolean ok = true;
    for (String key :
        List.of("node.verbsRegistrations", "node.verbsQueuePairs", "directory.shuffles")) {
      Map<String, Long> a = perExecutor(s0, key);
      Map<String, Long> b = perExecutor(s1, key);
      d.append(key).append(' ').append(a).append("->").append(b).append("; ");
      ok &= a.equals(b) && !a.isEmpty();
    }
    for (String id : pids.keySet()) {
      int[] a = r0.get(id);
      int[] b = r1.get(id);
      d.append("exec ")
          .append(id)
          .append(" mr/qp/cq/pd ")
          .append(Arrays.toString(a))
          .append("->")
          .append(Arrays.toString(b))
          .append("; ");
      // The kernel may still list a queue pair (and its MR) that the provider retired before the
      // baseline and destroys during the loop: fewer is fine, any growth is a leak.
      for (int k = 0; k < a.length; k++) {
        ok &= b[k] <= a[k];
      }
    }
    put("verbs.leakLoop.rounds", leakRounds);
    verdict("verbs.leakLoop", ok, d.toString());
  }

  private static void smallShuffleAndUnregister(JavaSparkContext jsc, int round) {
    JavaPairRDD<Integer, Long> sums =
        jsc.parallelize(IntStream.range(0, 400).boxed().collect(Collectors.toList()), 2)
            .mapToPair(x -> new Tuple2<>(x % 8, (long) x + round))
            .reduceByKey(Long::sum, 2);
    long total = sums.values().reduce(Long::sum);
    long want = 400L * 399 / 2 + 400L * round;
    if (total != want) {
      throw new IllegalStateException("round " + round + ": sum " + total + ", expected " + want);
    }
    int shuffleId =
        ((ShuffleDependency<?, ?, ?>) ScalaCollections.callSeq(sums.rdd(), "dependencies").get(0))
            .shuffleId();
    jsc.sc().cleaner().get().doCleanupShuffle(shuffleId, true);
  }

  /** {mr, qp, cq, pd} owned by each executor pid, from {@code rdma resource show}. */
  private static Map<String, int[]> rdmaResources(Map<String, Long> pids) throws Exception {
    Map<String, int[]> m = new TreeMap<>();
    String[] kinds = {"mr", "qp", "cq", "pd"};
    Map<String, List<String>> lines = new HashMap<>();
    for (String k : kinds) {
      lines.put(k, runLines("rdma", "resource", "show", k));
      System.out.println("spark-check rdma resource show " + k + ": " + lines.get(k));
    }
    for (Map.Entry<String, Long> e : pids.entrySet()) {
      int[] n = new int[4];
      for (int i = 0; i < 4; i++) {
        n[i] = (int) lines.get(kinds[i]).stream().filter(l -> ownedBy(l, e.getValue())).count();
      }
      m.put(e.getKey(), n);
    }
    return m;
  }

  /**
   * Whether a line of {@code rdma resource show} belongs to process {@code pid}. The kernel records
   * the task that created the object, which for a JVM is one of its threads: the pid printed may be
   * a thread id of the process, so {@code /proc/PID/task/TID} is checked too.
   */
  static boolean ownedBy(String line, long pid) {
    List<String> t = Arrays.asList(line.trim().split("\\s+"));
    int i = t.indexOf("pid");
    if (i < 0 || i + 1 >= t.size()) {
      return false;
    }
    String owner = t.get(i + 1);
    return owner.equals(String.valueOf(pid))
        || (owner.matches("[0-9]+")
            && Files.exists(Path.of("/proc", String.valueOf(pid), "task", owner)));
  }

  private static List<String> runLines(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    List<String> lines =
        new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
            .lines()
            .collect(Collectors.toList());
    if (!p.waitFor(2, TimeUnit.MINUTES) || p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", cmd) + " failed: " + lines);
    }
    return lines;
  }

  /** After the cluster closed: the executor JVMs are gone and so is every resource they held. */
  private void resourcesAfterExit(Map<String, Long> pids) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    for (long pid : pids.values()) {
      ProcessHandle.of(pid)
          .ifPresent(
              h -> {
                try {
                  h.onExit().get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (Exception e) {
                  throw new IllegalStateException("executor pid " + pid + " still alive", e);
                }
              });
    }
    Map<String, int[]> r = rdmaResources(pids);
    boolean ok = r.values().stream().allMatch(a -> Arrays.stream(a).sum() == 0);
    verdict(
        "verbs.resourcesAfterExit",
        ok,
        r.entrySet().stream()
            .map(e -> "exec " + e.getKey() + " mr/qp/cq/pd " + Arrays.toString(e.getValue()))
            .collect(Collectors.joining("; ")));
  }

  // ------------------------------------------------------------------ serving CPU, faults

  /**
   * Map outputs all written by executor A (map tasks prefer A, locality wait 60 s); while A's only
   * core is held by a waiting task, executor B runs every reduce task; A's CPU time over the reduce
   * job (from /proc) is what serving its outputs cost A.
   */
  private void servingCpu(String mode, JavaSparkContext jsc, Map<String, Long> pids)
      throws Exception {
    String a = "0";
    String b = "1";
    Path dir = Files.createTempDirectory("serving");
    String held = dir.resolve("held").toString();
    String release = dir.resolve("release").toString();
    JavaPairRDD<Long, byte[]> data =
        pinned(jsc, a, 4)
            .flatMapToPair(
                m -> {
                  if (!SparkEnv.get().executorId().equals(a)) {
                    throw new IllegalStateException(
                        "map task ran on executor " + SparkEnv.get().executorId());
                  }
                  List<Tuple2<Long, byte[]>> rows = new ArrayList<>();
                  SplittableRandom r = new SplittableRandom(m);
                  for (int i = 0; i < 40; i++) {
                    byte[] v = new byte[100 * 1024];
                    r.nextBytes(v);
                    rows.add(new Tuple2<>((long) i % 4, v));
                  }
                  return rows.iterator();
                });
    JavaPairRDD<Long, byte[]> shuffled = data.partitionBy(new org.apache.spark.HashPartitioner(4));
    ShuffleDependency<?, ?, ?> dep =
        (ShuffleDependency<?, ?, ?>)
            ScalaCollections.callSeq(shuffled.rdd(), "dependencies").get(0);
    scala.concurrent.Await.result(
        jsc.sc().submitMapStage(dep),
        scala.concurrent.duration.Duration.create(20, TimeUnit.MINUTES));
    CompletableFuture<Void> holder =
        CompletableFuture.runAsync(
            () ->
                pinned(jsc, a, 1)
                    .foreach(
                        x -> {
                          new File(held).createNewFile();
                          long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(30);
                          while (!new File(release).exists() && System.nanoTime() < end) {
                            Thread.sleep(50);
                          }
                        }));
    try {
      waitFor(new File(held), Duration.ofMinutes(10));
      long cpu0 = cpuMillis(pids.get(a));
      long t0 = System.nanoTime();
      List<String> readers =
          shuffled
              .mapPartitions(
                  it -> {
                    long n = 0;
                    while (it.hasNext()) {
                      n += it.next()._2().length;
                    }
                    return List.of(SparkEnv.get().executorId() + ":" + n).iterator();
                  })
              .collect();
      double wall = (System.nanoTime() - t0) / 1e9;
      long cpu1 = cpuMillis(pids.get(a));
      long total = readers.stream().mapToLong(s -> Long.parseLong(s.split(":")[1])).sum();
      boolean onB = readers.stream().allMatch(s -> s.startsWith(b + ":"));
      put(mode + ".servingCpu.servingExecutorCpuMs", cpu1 - cpu0);
      put(mode + ".servingCpu.readWallSeconds", String.format(Locale.ROOT, "%.1f", wall));
      put(mode + ".servingCpu.bytes", total);
      verdict(
          mode + ".servingCpu",
          onB && total == 4L * 40 * 100 * 1024,
          "readers " + readers + ", serving executor " + a + " CPU " + (cpu1 - cpu0) + " ms");
    } finally {
      new File(release).createNewFile();
      holder.get(10, TimeUnit.MINUTES);
    }
  }

  /** {@code n} one-element partitions whose preferred location is executor {@code id}. */
  private static JavaRDD<Integer> pinned(JavaSparkContext jsc, String id, int n) {
    String host =
        ScalaCollections.asJava(SparkEnv.get().blockManager().master().getMemoryStatus().keySet())
            .stream()
            .filter(bm -> bm.executorId().equals(id))
            .map(BlockManagerId::host)
            .findFirst()
            .orElseThrow(() -> new IllegalStateException("no executor " + id));
    List<Tuple2<Integer, Object>> parts = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      parts.add(
          new Tuple2<>(i, ScalaCollections.asScalaList(List.of("executor_" + host + "_" + id))));
    }
    return makeRddWithLocations(jsc.sc(), ScalaCollections.asScalaList(parts)).toJavaRDD();
  }

  /**
   * {@code sc.makeRDD(Seq[(T, Seq[String])])}, found by name: its parameter is {@code
   * scala.collection.Seq} on Scala 2.12 builds of Spark and {@code scala.collection.immutable.Seq}
   * on 2.13, and an immutable list is both.
   */
  @SuppressWarnings("unchecked")
  private static RDD<Integer> makeRddWithLocations(SparkContext sc, Object seqOfPairs) {
    for (Method m : SparkContext.class.getMethods()) {
      if (m.getName().equals("makeRDD") && m.getParameterCount() == 2) {
        try {
          return (RDD<Integer>) m.invoke(sc, seqOfPairs, ClassTag$.MODULE$.apply(Integer.class));
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException("SparkContext.makeRDD failed", e);
        }
      }
    }
    throw new IllegalStateException("no SparkContext.makeRDD(Seq, ClassTag)");
  }

  private static void waitFor(File f, Duration d) throws InterruptedException {
    long end = System.nanoTime() + d.toNanos();
    while (!f.exists()) {
      if (System.nanoTime() > end) {
        throw new IllegalStateException(f + " did not appear within " + d);
      }
      Thread.sleep(100);
    }
  }

  /** utime + stime of a process, from /proc (clock ticks of 10 ms on Linux). */
  static long cpuMillis(long pid) throws IOException {
    String stat = Files.readString(Path.of("/proc", String.valueOf(pid), "stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10;
  }

  /**
   * The reducer on one executor kills the other executor's JVM before reading from it; the job must
   * still give the exact result (Spark reruns the lost map outputs).
   */
  private void executorKilled(JavaSparkContext jsc, Map<String, Long> pids) throws Exception {
    AtomicInteger resubmitted = new AtomicInteger();
    AtomicInteger fetchFailures = new AtomicInteger();
    SparkListener l =
        new SparkListener() {
          @Override
          public void onStageSubmitted(SparkListenerStageSubmitted e) {
            if (e.stageInfo().attemptNumber() > 0) {
              resubmitted.incrementAndGet();
            }
          }

          @Override
          public void onTaskEnd(SparkListenerTaskEnd e) {
            if (e.reason() instanceof org.apache.spark.FetchFailed) {
              fetchFailures.incrementAndGet();
            }
          }
        };
    jsc.sc().addSparkListener(l);
    try {
      List<Integer> data = IntStream.range(0, 60_000).boxed().collect(Collectors.toList());
      Map<Integer, Long> expected = new HashMap<>();
      data.forEach(x -> expected.merge(x % 1000, (long) x, Long::sum));
      String marker = Files.createTempDirectory("kill").resolve("killed").toString();
      Map<Long, String> victims = new HashMap<>();
      pids.forEach((id, pid) -> victims.put(pid, id));
      List<Tuple2<Integer, Long>> got =
          jsc.parallelize(data, 6)
              .mapToPair(x -> new Tuple2<>(x % 1000, (long) x))
              .reduceByKey(Long::sum, 6)
              .mapPartitions(
                  (Iterator<Tuple2<Integer, Long>> it) -> {
                    if (new File(marker).createNewFile()) {
                      String me = SparkEnv.get().executorId();
                      victims.forEach(
                          (pid, id) -> {
                            if (!id.equals(me)) {
                              ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                            }
                          });
                    }
                    List<Tuple2<Integer, Long>> rows = new ArrayList<>();
                    it.forEachRemaining(rows::add);
                    return rows.iterator();
                  })
              .collect();
      Map<Integer, Long> actual = new HashMap<>();
      got.forEach(t -> actual.put(t._1(), t._2()));
      long alive =
          pids.values().stream()
              .filter(p -> ProcessHandle.of(p).map(ProcessHandle::isAlive).orElse(false))
              .count();
      put("verbs.executorKilled.fetchFailures", fetchFailures.get());
      put("verbs.executorKilled.stageRetries", resubmitted.get());
      verdict(
          "verbs.executorKilled",
          expected.equals(actual) && alive == 1,
          "results equal "
              + expected.equals(actual)
              + ", executors alive "
              + alive
              + " of 2, fetch failures "
              + fetchFailures.get()
              + ", stage retries "
              + resubmitted.get());
    } finally {
      jsc.sc().removeSparkListener(l);
    }
  }

  // ------------------------------------------------------------------ executors

  /** How long a check waits for every executor to answer a small job. */
  private static final Duration EXECUTOR_WAIT = Duration.ofMinutes(10);

  private static Map<String, Map<String, Long>> stats(JavaSparkContext jsc) {
    return ManagerCounters.byExecutor(jsc, 2, EXECUTOR_WAIT);
  }

  private static long sum(Map<String, Map<String, Long>> stats, String key) {
    return stats.values().stream().mapToLong(v -> v.getOrDefault(key, 0L)).sum();
  }

  private static Map<String, Long> perExecutor(Map<String, Map<String, Long>> stats, String key) {
    Map<String, Long> m = new TreeMap<>();
    stats.forEach(
        (id, v) -> {
          if (v.containsKey(key)) {
            m.put(id, v.get(key));
          }
        });
    return m;
  }
}
