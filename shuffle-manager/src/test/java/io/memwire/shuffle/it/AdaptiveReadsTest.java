package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.compat.ScalaCollections;
import io.memwire.transfer.metrics.TransportMetrics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.spark.Success$;
import org.apache.spark.TaskContext;
import org.apache.spark.deploy.worker.Worker$;
import org.apache.spark.rpc.RpcAddress;
import org.apache.spark.rpc.RpcEnv;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.CoalescedMapperPartitionSpec;
import org.apache.spark.sql.execution.CoalescedPartitionSpec;
import org.apache.spark.sql.execution.PartialMapperPartitionSpec;
import org.apache.spark.sql.execution.PartialReducerPartitionSpec;
import org.apache.spark.sql.execution.ShufflePartitionSpec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AQEShuffleReadExec;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec;
import org.apache.spark.sql.execution.joins.SortMergeJoinExec;
import org.apache.spark.sql.functions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import scala.Option;
import scala.Tuple2;

/**
 * The reads Spark SQL's adaptive execution (AQE) and speculation make, on a cluster with the RDMA
 * manager. Each case is checked like {@link DifferentialTestBase} checks its jobs: results equal to
 * those under Spark's SortShuffleManager (computed first, on a cluster with the {@code sort}
 * manager), Spark's remote bytes all read by the RDMA client, and no block through Spark's
 * transfer. Each case also checks, from the final AQE plan or from the scheduler's events, that the
 * read it names really happened:
 *
 * <ul>
 *   <li>skew join split (OptimizeSkewedJoin): a skew sort-merge join whose skewed partition is read
 *       by several reducers, each a range of the map outputs ({@code PartialReducerPartitionSpec}),
 *       the other partitions coalesced;
 *   <li>local shuffle read, after a sort-merge join became a broadcast join at run time: reducers
 *       reading a range of one map output's partitions ({@code PartialMapperPartitionSpec}), or
 *       every partition of a range of map outputs ({@code CoalescedMapperPartitionSpec});
 *   <li>coalesced partitions ({@code CoalescedPartitionSpec}): reducers reading several consecutive
 *       partitions, read one-sided as batch blocks;
 *   <li>speculation: the first attempts of some reduce tasks are slow, speculative copies read the
 *       same blocks and succeed, the first attempts are killed; no read buffer or request is left.
 * </ul>
 *
 * <p>Spark runs a speculative copy only on a host where its task has no attempt, and every executor
 * of a {@code local-cluster} runs on the same host: the speculation case (a cluster of its own,
 * speculation being a setting read at start) adds a Worker on 127.0.0.2 to the cluster's Master,
 * and its executor is where the copies of tasks that started on the other host run (and the other
 * way round).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class AdaptiveReadsTest {
  /** AQE on, no broadcast join planned or made at run time, unless a case says otherwise. */
  private static final Map<String, String> AQE =
      Map.of(
          "spark.sql.adaptive.enabled", "true",
          "spark.sql.autoBroadcastJoinThreshold", "-1",
          "spark.sql.adaptive.autoBroadcastJoinThreshold", "-1",
          "spark.sql.shuffle.partitions", "16");

  /**
   * Speculation checked every 100 ms, for tasks running 1.5 times the median once half are done,
   * and never for tasks under 2 s: only the deliberately slow ones (a copy of a task that merely
   * ran late could be killed mid-read, and Spark does not count a killed attempt's unfinished
   * reads).
   */
  private static final Map<String, String> SPECULATION =
      Map.of(
          "spark.speculation", "true",
          "spark.speculation.interval", "100ms",
          "spark.speculation.quantile", "0.5",
          "spark.speculation.multiplier", "1.5",
          "spark.speculation.minTaskRuntime", "2s");

  /** Reduce partitions of the speculation job whose first attempt is slow. */
  private static final Set<Integer> SLOW_PARTITIONS = Set.of(1, 4);

  /** How long such a first attempt sleeps unless killed: far longer than a speculative copy. */
  private static final long SLOW_ATTEMPT_MS = 20_000;

  /** The host of the added Worker, not the local-cluster's. */
  private static final String SECOND_HOST = "127.0.0.2";

  private Map<String, List<String>> expected;
  private LocalSparkCluster cluster;
  private TaskMetricsListener listener;
  private RpcEnv secondHostWorker;

  @BeforeAll
  void referenceAnswers() {
    Map<String, List<String>> r = new LinkedHashMap<>();
    try (LocalSparkCluster sort = Clusters.start("sort", Map.of())) {
      SparkSession s = sort.session();
      r.put("skewJoin", run(s, skewJoinConf(), AdaptiveReadsTest::skewedJoin).rows());
      r.put(
          "localReadPerMapOutput",
          run(s, localReadConf(false), AdaptiveReadsTest::broadcastAtRunTime).rows());
      r.put(
          "localReadOfMapRanges",
          run(s, localReadConf(true), AdaptiveReadsTest::broadcastAtRunTime).rows());
      r.put("coalesced", run(s, coalesceConf(), AdaptiveReadsTest::groupBy).rows());
      r.put("speculation", speculationJob(s, false));
      if (rowChecksums()) {
        r.put("nondeterministicRetry", nondeterministicRetry(sort));
      }
    }
    expected = r;
  }

  @AfterAll
  void stopCluster() {
    closeCluster();
  }

  // ---- 1. skew join split ----

  /** Partitions over 1 KiB and twice the median are skewed; the others coalesced up to 8 KiB. */
  private static Map<String, String> skewJoinConf() {
    Map<String, String> c = new LinkedHashMap<>(AQE);
    c.put("spark.sql.adaptive.coalescePartitions.enabled", "true");
    c.put("spark.sql.adaptive.coalescePartitions.minPartitionSize", "1k");
    c.put("spark.sql.adaptive.skewJoin.enabled", "true");
    c.put("spark.sql.adaptive.skewJoin.skewedPartitionFactor", "2");
    c.put("spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes", "1k");
    c.put("spark.sql.adaptive.advisoryPartitionSizeInBytes", "8k");
    return c;
  }

  /** 70% of the left side has key 0; its 6 map outputs are where the skewed partition splits. */
  private static Dataset<Row> skewedJoin(SparkSession s) {
    Dataset<Row> left =
        s.range(0, 20_000, 1, 6)
            .selectExpr("CASE WHEN id % 10 < 7 THEN 0 ELSE id % 500 END AS k", "id AS a");
    Dataset<Row> right = s.range(0, 1_000, 1, 3).selectExpr("id % 500 AS k", "id * 3 AS b");
    return left.join(right, "k");
  }

  @Test
  @Order(1)
  void skewJoinSplitReadsMapRangesOneSided() throws Exception {
    Run run = onAqeCluster("skewJoin", skewJoinConf(), AdaptiveReadsTest::skewedJoin);
    List<SparkPlan> nodes = finalPlanNodes(run.plan());
    assertTrue(
        nodes.stream().anyMatch(p -> p instanceof SortMergeJoinExec j && j.isSkewJoin()),
        "no skew sort-merge join in " + run.plan());
    assertTrue(
        specs(nodes, PartialReducerPartitionSpec.class).size() >= 2,
        "no partition split into map ranges in " + run.plan());
  }

  // ---- 2. local shuffle read ----

  /**
   * Planned as a sort-merge join (the small side's estimate is above the threshold), made a
   * broadcast join once the small side's shuffle shows its size. {@code coalesce}: both reads were
   * coalesced to one partition first, so each local read is one reducer over every partition of all
   * its map outputs; else one reducer per map output and range of partitions.
   */
  private static Map<String, String> localReadConf(boolean coalesce) {
    Map<String, String> c = new LinkedHashMap<>(AQE);
    c.put("spark.sql.autoBroadcastJoinThreshold", "100k");
    c.put("spark.sql.adaptive.autoBroadcastJoinThreshold", "100k");
    c.put("spark.sql.adaptive.localShuffleReader.enabled", "true");
    c.put("spark.sql.adaptive.coalescePartitions.enabled", String.valueOf(coalesce));
    if (coalesce) {
      c.put("spark.sql.adaptive.coalescePartitions.parallelismFirst", "false");
      c.put("spark.sql.adaptive.advisoryPartitionSizeInBytes", "64m");
    }
    return c;
  }

  private static Dataset<Row> broadcastAtRunTime(SparkSession s) {
    Dataset<Row> big = s.range(0, 40_000, 1, 6).selectExpr("id % 5000 AS k", "id AS a");
    Dataset<Row> small =
        s.range(0, 200_000, 1, 4).where("id % 1000 = 7").selectExpr("id % 5000 AS k", "id AS b");
    return big.join(small, "k");
  }

  @Test
  @Order(2)
  void localReadOfEachMapOutputIsOneSided() throws Exception {
    Run run =
        onAqeCluster(
            "localReadPerMapOutput", localReadConf(false), AdaptiveReadsTest::broadcastAtRunTime);
    List<SparkPlan> nodes = finalPlanNodes(run.plan());
    assertBroadcastJoinWithLocalRead(nodes, run.plan());
    assertTrue(
        specs(nodes, PartialMapperPartitionSpec.class).size() >= 2,
        "no PartialMapperPartitionSpec in " + run.plan());
  }

  @Test
  @Order(3)
  void localReadOfMapRangesIsOneSided() throws Exception {
    Run run =
        onAqeCluster(
            "localReadOfMapRanges", localReadConf(true), AdaptiveReadsTest::broadcastAtRunTime);
    List<SparkPlan> nodes = finalPlanNodes(run.plan());
    assertBroadcastJoinWithLocalRead(nodes, run.plan());
    assertFalse(
        specs(nodes, CoalescedMapperPartitionSpec.class).isEmpty(),
        "no CoalescedMapperPartitionSpec in " + run.plan());
  }

  private static void assertBroadcastJoinWithLocalRead(List<SparkPlan> nodes, SparkPlan plan) {
    assertTrue(
        nodes.stream().anyMatch(p -> p instanceof BroadcastHashJoinExec),
        "not made a broadcast join: " + plan);
    assertTrue(
        nodes.stream().noneMatch(p -> p instanceof SortMergeJoinExec),
        "still a sort-merge join: " + plan);
    assertTrue(
        nodes.stream().anyMatch(p -> p instanceof AQEShuffleReadExec r && r.isLocalRead()),
        "no local shuffle read in " + plan);
  }

  // ---- 3. coalesced partitions ----

  private static Map<String, String> coalesceConf() {
    Map<String, String> c = new LinkedHashMap<>(AQE);
    c.put("spark.sql.shuffle.partitions", "24");
    c.put("spark.sql.adaptive.coalescePartitions.enabled", "true");
    c.put("spark.sql.adaptive.coalescePartitions.parallelismFirst", "false");
    c.put("spark.sql.adaptive.advisoryPartitionSizeInBytes", "40k");
    c.put("spark.sql.adaptive.coalescePartitions.minPartitionSize", "1k");
    return c;
  }

  private static Dataset<Row> groupBy(SparkSession s) {
    return s.range(0, 200_000, 1, 5)
        .selectExpr("id % 3000 AS k", "id * 7 % 1001 AS v")
        .groupBy("k")
        .agg(functions.sum("v"), functions.count("v"), functions.max("v"));
  }

  @Test
  @Order(4)
  void coalescedReadsOfConsecutivePartitionsAreOneSided() throws Exception {
    var before = Clusters.executorStats(aqeCluster().javaSparkContext(), 2);
    Run run = onAqeCluster("coalesced", coalesceConf(), AdaptiveReadsTest::groupBy);
    var after = Clusters.executorStats(cluster.javaSparkContext(), 2);
    List<SparkPlan> nodes = finalPlanNodes(run.plan());
    assertTrue(
        nodes.stream()
            .anyMatch(p -> p instanceof AQEShuffleReadExec r && r.hasCoalescedPartition()),
        "no coalesced read in " + run.plan());
    assertTrue(
        specs(nodes, CoalescedPartitionSpec.class).stream()
            .anyMatch(c -> c.endReducerIndex() - c.startReducerIndex() > 1),
        "no reducer of several partitions in " + run.plan());
    assertTrue(
        Clusters.sum(after, ShuffleMetrics.RDMA_BATCH_BLOCKS)
            > Clusters.sum(before, ShuffleMetrics.RDMA_BATCH_BLOCKS),
        "no batch block read one-sided: " + after);
  }

  // ---- 4. speculation ----

  /**
   * Sums by key, 4 map outputs and 6 reducers. With {@code slow}, the first attempt of each reducer
   * in {@link #SLOW_PARTITIONS} reads all its records (so what it read is counted when it is
   * killed), then sleeps until killed.
   */
  private static List<String> speculationJob(SparkSession s, boolean slow) {
    return ShuffleJobs.sorted(
        ShuffleJobs.jsc(s)
            .parallelize(ShuffleJobs.randomInts(40_000, 11, 1_000_000), 4)
            .mapToPair(x -> new Tuple2<>(x % 2000, (long) x))
            .reduceByKey(Long::sum, 6)
            .mapPartitionsWithIndex(
                (partition, records) -> {
                  List<Tuple2<Integer, Long>> all = new ArrayList<>();
                  records.forEachRemaining(all::add);
                  if (slow
                      && SLOW_PARTITIONS.contains(partition)
                      && TaskContext.get().attemptNumber() == 0) {
                    Thread.sleep(SLOW_ATTEMPT_MS);
                  }
                  return all.iterator();
                },
                true)
            .collect());
  }

  // ---- 5. order-independent checksums of a nondeterministic stage (Spark 4.1+) ----

  /** Whether the running Spark computes row-based, order-independent shuffle checksums. */
  private static boolean rowChecksums() {
    try {
      Class.forName("org.apache.spark.shuffle.checksum.RowBasedChecksum");
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  /**
   * A nondeterministic SQL shuffle (stage A: a rerun of its maps moves every key by 100) read by an
   * RDD stage B (keys mod 10, so the final sums do not depend on which maps reran), then summed.
   * Run once; then again on the same A (its map stage reused), where B's partition 0 reports a
   * fetch failure of A's map 0 on its first attempt: Spark reruns that executor's A maps, which now
   * write other rows, and with order-independent checksums sees the mismatch and retries every task
   * of B (Memwire must pass the maps' checksums through, as {@code MapStatus.checksumValue}).
   *
   * @return the sorted results, whether Spark recorded a checksum mismatch on A, and which of B's
   *     partitions its retry ran
   */
  private static List<String> nondeterministicRetry(LocalSparkCluster c) {
    SparkSession s = c.session();
    Map<String, String> conf =
        Map.of(
            "spark.sql.adaptive.enabled", "false",
            "spark.sql.shuffle.partitions", "8",
            "spark.sql.shuffle.orderIndependentChecksum.enabled", "true",
            "spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch", "true");
    Map<String, String> old = new LinkedHashMap<>();
    conf.forEach((k, v) -> old.put(k, s.conf().get(k, null)));
    conf.forEach((k, v) -> s.conf().set(k, v));
    try {
      java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("memwire-nd-retry");
      String flag = dir.resolve("rerun").toString();
      String fetchFailure = dir.resolve("fetch-failure").toString();
      s.udf()
          .register(
              "memwire_rerun_shift",
              (org.apache.spark.sql.api.java.UDF1<Long, Long>)
                  k -> java.nio.file.Files.exists(java.nio.file.Path.of(flag)) ? k + 100 : k,
              org.apache.spark.sql.types.DataTypes.LongType);
      Dataset<Row> a =
          s.range(0, 40_000, 1, 4)
              .selectExpr("memwire_rerun_shift(id % 100) AS k", "id AS v")
              .repartition(8, functions.col("k"));
      org.apache.spark.api.java.JavaRDD<Row> rowsOfA = a.javaRDD(); // one plan: A is reused
      List<String> first = consumerOf(rowsOfA, fetchFailure);
      int shuffleA = shuffleIdUnder(rowsOfA.rdd());
      org.apache.spark.MapOutputTrackerMaster tracker =
          (org.apache.spark.MapOutputTrackerMaster)
              org.apache.spark.SparkEnv.get().mapOutputTracker();
      org.apache.spark.ShuffleStatus status = tracker.shuffleStatuses().get(shuffleA).get();
      org.apache.spark.scheduler.MapStatus map0 = status.mapStatuses()[0];
      org.apache.spark.storage.BlockManagerId at = map0.location();
      java.nio.file.Files.writeString(
          java.nio.file.Path.of(fetchFailure),
          String.join(
              "\n",
              at.executorId(),
              at.host(),
              String.valueOf(at.port()),
              at.topologyInfo().isDefined() ? at.topologyInfo().get() : "",
              String.valueOf(shuffleA),
              String.valueOf(map0.mapId())));
      java.nio.file.Files.createFile(java.nio.file.Path.of(flag));
      ConsumerRetries retries = new ConsumerRetries(shuffleA);
      c.sparkContext().addSparkListener(retries);
      List<String> second;
      try {
        second = consumerOf(rowsOfA, fetchFailure);
        c.sparkContext().listenerBus().waitUntilEmpty(10_000);
      } finally {
        c.sparkContext().removeSparkListener(retries);
      }
      assertEquals(first, second, "the sums do not depend on which maps reran");
      List<String> out = new ArrayList<>(second);
      out.add("checksum mismatch recorded on A: " + !status.checksumMismatchIndices().isEmpty());
      out.add("B partitions its retry ran: " + new java.util.TreeSet<>(retries.partitions));
      return out;
    } catch (java.io.IOException | java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException(e);
    } finally {
      old.forEach(
          (k, v) -> {
            if (v == null) {
              s.conf().unset(k);
            } else {
              s.conf().set(k, v);
            }
          });
    }
  }

  /**
   * Stage B over A's rows and the final sums by key mod 10. With the fetch-failure file present,
   * B's partition 0 fails its first attempt with a fetch failure of the map output it names.
   */
  private static List<String> consumerOf(
      org.apache.spark.api.java.JavaRDD<Row> rowsOfA, String fetchFailure) {
    return ShuffleJobs.sorted(
        rowsOfA
            .mapPartitions(
                rows -> {
                  TaskContext t = TaskContext.get();
                  java.nio.file.Path f = java.nio.file.Path.of(fetchFailure);
                  if (t.partitionId() == 0
                      && t.stageAttemptNumber() == 0
                      && java.nio.file.Files.exists(f)) {
                    String[] w = java.nio.file.Files.readString(f).split("\n", -1);
                    throw new org.apache.spark.shuffle.FetchFailedException(
                        org.apache.spark.storage.BlockManagerId.apply(
                            w[0],
                            w[1],
                            Integer.parseInt(w[2]),
                            w[3].isEmpty() ? Option.empty() : Option.apply(w[3])),
                        Integer.parseInt(w[4]),
                        Long.parseLong(w[5]),
                        0,
                        0,
                        "injected by the test",
                        null);
                  }
                  List<Tuple2<Long, Long>> out = new ArrayList<>();
                  rows.forEachRemaining(
                      r -> out.add(new Tuple2<>(r.getLong(0) % 10, r.getLong(1))));
                  return out.iterator();
                })
            .mapToPair(t -> t)
            .reduceByKey(Long::sum, 2)
            .collect());
  }

  /** The shuffle id of the first shuffle dependency below {@code rdd}. */
  private static int shuffleIdUnder(org.apache.spark.rdd.RDD<?> rdd) {
    List<org.apache.spark.rdd.RDD<?>> todo = new ArrayList<>(List.of(rdd));
    while (!todo.isEmpty()) {
      org.apache.spark.rdd.RDD<?> r = todo.remove(0);
      for (org.apache.spark.Dependency<?> d :
          ScalaCollections.<org.apache.spark.Dependency<?>>callSeq(r, "dependencies")) {
        if (d instanceof org.apache.spark.ShuffleDependency<?, ?, ?> sd) {
          return sd.shuffleId();
        }
        todo.add(d.rdd());
      }
    }
    throw new AssertionError("no shuffle under " + rdd);
  }

  /** The partitions that retries (attempt > 0) of stage B ran to success. */
  private static final class ConsumerRetries extends SparkListener {
    final Set<Integer> partitions = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final Set<String> retries = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final int shuffleA;

    ConsumerRetries(int shuffleA) {
      this.shuffleA = shuffleA;
    }

    @Override
    public void onStageSubmitted(org.apache.spark.scheduler.SparkListenerStageSubmitted e) {
      var i = e.stageInfo();
      // B: the shuffle map stage that is not A's.
      if (i.attemptNumber() > 0
          && i.shuffleDepId().isDefined()
          && (int) i.shuffleDepId().get() != shuffleA) {
        retries.add(i.stageId() + "." + i.attemptNumber());
      }
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd e) {
      if (e.reason() == Success$.MODULE$
          && retries.contains(e.stageId() + "." + e.stageAttemptId())) {
        partitions.add(e.taskInfo().partitionId());
      }
    }
  }

  @Test
  @Order(5)
  void aNondeterministicStageRetriedAfterAFetchFailureBehavesAsUnderSortShuffle() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        rowChecksums(), "Spark before 4.1 has no order-independent checksums");
    LocalSparkCluster c = aqeCluster();
    List<String> actual = nondeterministicRetry(c);
    List<String> sort = expected.get("nondeterministicRetry");
    assertTrue(
        sort.contains("checksum mismatch recorded on A: true"),
        "sort shuffle: Spark saw the rerun maps' other output: " + sort);
    assertEquals(sort, actual, "results and retries differ from SortShuffleManager's");
  }

  @Test
  @Order(6)
  void speculativeReduceTasksReadOneSided() throws Exception {
    closeCluster();
    cluster = Clusters.start(Clusters.MANAGER, SPECULATION);
    listener = new TaskMetricsListener();
    cluster.sparkContext().addSparkListener(listener);
    addWorkerOnSecondHost();
    Attempts attempts = new Attempts();
    cluster.sparkContext().addSparkListener(attempts);

    var before = Clusters.executorStats(cluster.javaSparkContext(), 3);
    listener.reset();
    long start = System.nanoTime();
    List<String> actual = speculationJob(cluster.session(), true);
    long ms = (System.nanoTime() - start) / 1_000_000;
    attempts.awaitAllEnded(Duration.ofSeconds(30));
    cluster.sparkContext().listenerBus().waitUntilEmpty(10_000);
    var after = Clusters.executorStats(cluster.javaSparkContext(), 3);

    assertEquals(expected.get("speculation"), actual, "results differ from SortShuffleManager's");
    assertTrue(
        attempts.speculativeSucceeded > 0,
        "no speculative task succeeded (the job took " + ms + " ms)");
    assertTrue(
        attempts.speculativeRecordsRead > 0, "the speculative copies read no shuffle record");
    Clusters.assertRemoteBytesOneSided("speculation", listener, before, after);
    for (var e : after.entrySet()) {
      Map<String, Long> m = e.getValue();
      assertEquals(
          0L,
          m.get(ShuffleMetrics.node(TransportMetrics.POOL_BUFFERS_OUTSTANDING)),
          "read buffers not released on " + e.getKey() + ": " + m);
      assertEquals(
          0L,
          m.get(ShuffleMetrics.node(TransportMetrics.OUTSTANDING_REQUESTS)),
          "reads outstanding on " + e.getKey() + ": " + m);
    }
  }

  /**
   * Starts a Worker on {@link #SECOND_HOST}, registered with the cluster's Master (which then
   * launches an executor of the application there), and waits until that executor has registered.
   */
  private void addWorkerOnSecondHost() throws InterruptedException {
    CountDownLatch added = new CountDownLatch(1);
    cluster
        .sparkContext()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onExecutorAdded(SparkListenerExecutorAdded e) {
                if (SECOND_HOST.equals(e.executorInfo().executorHost())) {
                  added.countDown();
                }
              }
            });
    // The Master's address, as the application's client has it (private[spark] in Scala).
    var backend = (StandaloneSchedulerBackend) cluster.sparkContext().schedulerBackend();
    RpcAddress[] masters =
        backend.client().org$apache$spark$deploy$client$StandaloneAppClient$$masterRpcAddresses();
    secondHostWorker =
        Worker$.MODULE$.startRpcEnvAndEndpoint(
            SECOND_HOST,
            0,
            0,
            1,
            1024,
            Arrays.stream(masters).map(RpcAddress::toSparkURL).toArray(String[]::new),
            null,
            Option.apply(3),
            cluster.sparkContext().getConf(),
            Option.empty());
    assertTrue(added.await(60, TimeUnit.SECONDS), "no executor registered from " + SECOND_HOST);
  }

  /** Counts task attempts running, and the speculative ones that succeeded. */
  private static final class Attempts extends SparkListener {
    private int running;
    int speculativeSucceeded;
    long speculativeRecordsRead;

    @Override
    public synchronized void onTaskStart(SparkListenerTaskStart start) {
      running++;
    }

    @Override
    public synchronized void onTaskEnd(SparkListenerTaskEnd end) {
      running--;
      if (end.taskInfo().speculative() && end.reason() == Success$.MODULE$) {
        speculativeSucceeded++;
        if (end.taskMetrics() != null) {
          speculativeRecordsRead += end.taskMetrics().shuffleReadMetrics().recordsRead();
        }
      }
      notifyAll();
    }

    /** Waits until every attempt started has ended, the killed ones included. */
    synchronized void awaitAllEnded(Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (running > 0) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
          throw new AssertionError(running + " task attempts still running after " + timeout);
        }
        wait(left);
      }
    }
  }

  // ---- helpers ----

  /** A job's rows, sorted, and its executed plan. */
  private record Run(List<String> rows, SparkPlan plan) {}

  /** Runs {@code job} in a new session of {@code base} with the SQL settings {@code sqlConf}. */
  private static Run run(
      SparkSession base, Map<String, String> sqlConf, Function<SparkSession, Dataset<Row>> job) {
    SparkSession s = base.newSession();
    sqlConf.forEach((k, v) -> s.conf().set(k, v));
    Dataset<Row> df = job.apply(s);
    List<String> rows =
        df.collectAsList().stream().map(Row::toString).sorted().collect(Collectors.toList());
    return new Run(rows, executedPlan(df));
  }

  /**
   * The executed plan of {@code df}. Spark 4 keeps {@code queryExecution()} on its classic Dataset
   * only, Spark 3.5 on {@link Dataset}: looked up on the object, so one test runs on both lines.
   */
  private static SparkPlan executedPlan(Dataset<Row> df) {
    try {
      Object qe = df.getClass().getMethod("queryExecution").invoke(df);
      return (SparkPlan) qe.getClass().getMethod("executedPlan").invoke(qe);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError("no executed plan on " + df.getClass(), e);
    }
  }

  /** The cluster of the AQE cases, started at first use. */
  private LocalSparkCluster aqeCluster() {
    if (cluster == null) {
      cluster = Clusters.start(Clusters.MANAGER, Map.of());
      listener = new TaskMetricsListener();
      cluster.sparkContext().addSparkListener(listener);
    }
    return cluster;
  }

  /** Runs an AQE case and checks its results and reads. */
  private Run onAqeCluster(
      String name, Map<String, String> sqlConf, Function<SparkSession, Dataset<Row>> job)
      throws Exception {
    LocalSparkCluster c = aqeCluster();
    var before = Clusters.executorStats(c.javaSparkContext(), 2);
    listener.reset();
    Run run = run(c.session(), sqlConf, job);
    c.sparkContext().listenerBus().waitUntilEmpty(10_000);
    var after = Clusters.executorStats(c.javaSparkContext(), 2);
    assertEquals(
        expected.get(name), run.rows(), name + ": results differ from SortShuffleManager's");
    Clusters.assertRemoteBytesOneSided(name, listener, before, after);
    return run;
  }

  /** Every node of a final AQE plan, down through its query stages. */
  private static List<SparkPlan> finalPlanNodes(SparkPlan plan) {
    List<SparkPlan> out = new ArrayList<>();
    List<SparkPlan> todo = new ArrayList<>(List.of(plan));
    while (!todo.isEmpty()) {
      SparkPlan p = todo.remove(todo.size() - 1);
      out.add(p);
      if (p instanceof AdaptiveSparkPlanExec a) {
        assertTrue(a.isFinalPlan(), "not a final plan: " + a);
        todo.add(a.executedPlan());
      } else if (p instanceof QueryStageExec q) {
        todo.add(q.plan());
      } else {
        todo.addAll(ScalaCollections.<SparkPlan>callSeq(p, "children")); // a Seq of either Scala
      }
    }
    return out;
  }

  /** The partition specs of class {@code type} of every AQE shuffle read among {@code nodes}. */
  private static <T extends ShufflePartitionSpec> List<T> specs(
      List<SparkPlan> nodes, Class<T> type) {
    List<T> out = new ArrayList<>();
    for (SparkPlan p : nodes) {
      if (p instanceof AQEShuffleReadExec r) {
        for (ShufflePartitionSpec s :
            ScalaCollections.<ShufflePartitionSpec>callSeq(r, "partitionSpecs")) {
          if (type.isInstance(s)) {
            out.add(type.cast(s));
          }
        }
      }
    }
    return out;
  }

  /** Stops the added Worker (and its executor), then the cluster. */
  private void closeCluster() {
    if (secondHostWorker != null) {
      secondHostWorker.shutdown();
      secondHostWorker.awaitTermination();
      secondHostWorker = null;
    }
    if (cluster != null) {
      cluster.close();
      cluster = null;
    }
  }
}
