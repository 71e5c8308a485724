package io.memwire.mainjob;

import io.memwire.localcluster.SparkKeys;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * One round of the main job in a running application: the first small job (it pays what a first job
 * pays: JIT of the read path, first connections, first directory and index reads), the main job,
 * then the small job again (what every later small job pays); its {@link ShuffleAppResult} printed,
 * checked and written.
 */
final class Round {
  private Round() {}

  /**
   * One round; runs the first small job unless {@code earlierCold} (a first round's) is given.
   * Writes {@code out} only once every check passed ({@code requireOneSided}: with Memwire, every
   * remote byte one-sided). Returns the first small job's phase.
   */
  static Phase run(
      SparkSession spark,
      SparkShuffleMetrics metrics,
      JobShape shape,
      int smallRepeats,
      double readySeconds,
      Path out,
      Phase earlierCold,
      boolean requireOneSided)
      throws Exception {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    SparkConf conf = jsc.getConf();
    boolean memwire = conf.get(SparkKeys.SHUFFLE_MANAGER, "sort").contains("RdmaShuffleManager");

    Phase cold =
        earlierCold != null ? earlierCold : Phase.measure(spark, metrics, shape.small(), 1);
    Phase main = Phase.measure(spark, metrics, shape, 1);
    List<Double> warm = new ArrayList<>();
    Phase warmTotal = null;
    for (int i = 0; i < smallRepeats; i++) {
      Phase p = Phase.measure(spark, metrics, shape.small(), 1);
      warm.add(p.seconds());
      warmTotal = warmTotal == null ? p : Phase.plus(warmTotal, p);
    }
    warm.sort(Double::compare);
    ResultFingerprint[] r = main.results();
    ResultFingerprint[] sr = cold.results();
    String digest =
        String.format(Locale.ROOT, "%016x-%016x-%016x", r[0].hash, r[1].hash, r[2].hash);
    String smallDigest =
        String.format(Locale.ROOT, "%016x-%016x-%016x", sr[0].hash, sr[1].hash, sr[2].hash);
    boolean ordered =
        Arrays.stream(r).allMatch(x -> x.ordered) && Arrays.stream(sr).allMatch(x -> x.ordered);
    // Proof over every phase: Spark's remote bytes, and what Memwire moved one-sided.
    List<Phase> all = new ArrayList<>();
    if (earlierCold == null) {
      all.add(cold);
    }
    all.add(main);
    if (warmTotal != null) {
      all.add(warmTotal);
    }
    long remoteAll = all.stream().mapToLong(p -> p.spark("remoteBytes")).sum();
    long oneSidedAll = all.stream().mapToLong(p -> p.manager(ManagerCounter.RDMA_BYTES)).sum();
    long fallbackAll = all.stream().mapToLong(p -> p.manager(ManagerCounter.FALLBACK_BLOCKS)).sum();
    long failedAll = all.stream().mapToLong(p -> p.manager(ManagerCounter.FAILED_BLOCKS)).sum();
    // What a small job made the manager do, per job: cold (first) and warm (later, averaged).
    int n = Math.max(1, smallRepeats);
    // The executors' CPU per GiB of remote bytes in the main job (-1: not measurable here).
    double gib = main.spark("remoteBytes") / 1073741824.0;
    ShuffleAppResult result =
        new ShuffleAppResult(
            conf.get(SparkKeys.SHUFFLE_MANAGER, "sort"),
            conf.get(SparkKeys.MEMWIRE_PROVIDER, "-"),
            Boolean.parseBoolean(conf.get(SparkKeys.READ_HOST_LOCAL_DISK, "true")),
            shape.records(),
            main.seconds(),
            readySeconds,
            cold.seconds(),
            warm.isEmpty() ? 0 : ShuffleApp.median(warm),
            r[0].rows + r[1].rows + r[2].rows,
            digest,
            smallDigest,
            ordered,
            main.spark("bytesWritten"),
            main.spark("remoteBytes"),
            main.spark("localBytes"),
            main.spark("fetchWaitMs"),
            main.spark("recordsRead"),
            main.hasExecutorCounters(),
            main.manager(ManagerCounter.RDMA_BYTES),
            Math.max(0, main.spark("remoteBytes") - main.manager(ManagerCounter.RDMA_BYTES)),
            main.manager(ManagerCounter.FALLBACK_BLOCKS),
            remoteAll,
            oneSidedAll,
            fallbackAll,
            failedAll,
            counters(cold, 1),
            warmTotal == null ? counters(null, 1) : counters(warmTotal, n),
            counters(main, 1),
            main.manager(ManagerCounter.OPEN_CONNECTIONS),
            cpuMsPerGiB(main, "serving", gib),
            cpuMsPerGiB(main, "transport", gib),
            cpuMsPerGiB(main, "executor", gib));
    String json = result.toJson();
    System.out.println("memwire-main-job result " + json);
    if (!ordered) {
      throw new IllegalStateException("a sorted result was out of order: " + json);
    }
    if (requireOneSided
        && memwire
        && remoteAll > 0
        && (oneSidedAll < remoteAll || fallbackAll > 0 || failedAll > 0)) {
      throw new IllegalStateException(
          String.format(
              Locale.ROOT,
              "PATH CHECK FAILED: Spark read"
                  + " %,d remote shuffle bytes, Memwire %,d of them one-sided; %d blocks went to Spark's"
                  + " own transfer, %d failed",
              remoteAll,
              oneSidedAll,
              fallbackAll,
              failedAll));
    }
    if (out != null) {
      result.writeTo(out);
    }
    return cold;
  }

  /** A phase's manager counters per job ({@code jobs} of them); all zero for no phase. */
  private static ShuffleAppResult.JobCounters counters(Phase p, int jobs) {
    if (p == null) {
      return new ShuffleAppResult.JobCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1);
    }
    return new ShuffleAppResult.JobCounters(
        p.manager(ManagerCounter.OUTPUTS_PUBLISHED) / jobs,
        p.manager(ManagerCounter.SLOT_READS) / jobs,
        p.manager(ManagerCounter.INDEX_READS) / jobs,
        p.manager(ManagerCounter.INDEX_ENTRY_READS) / jobs,
        p.manager(ManagerCounter.INDEX_CACHE_HITS) / jobs,
        p.manager(ManagerCounter.FETCH_REQUESTS) / jobs,
        p.manager(ManagerCounter.FIRST_BLOCK_MICROS) / jobs,
        p.manager(ManagerCounter.RDMA_BLOCKS) / jobs,
        p.spark("remoteBytes") / jobs,
        p.spark("fetchWaitMs") / jobs,
        p.manager(ManagerCounter.PUBLISH_MICROS) / jobs,
        cpuMs(p, "executor", jobs),
        cpuMs(p, "jit", jobs));
  }

  /** A phase's executor CPU of one thread group per job, or -1 when not measured. */
  private static long cpuMs(Phase p, String group, int jobs) {
    Long nanos = p.cpu().get(group);
    return nanos == null ? -1 : nanos / 1_000_000 / jobs;
  }

  /** A phase's executor CPU of one thread group per GiB, or -1 when not measured. */
  private static double cpuMsPerGiB(Phase p, String group, double gib) {
    Long nanos = p.cpu().get(group);
    return nanos == null || gib == 0 ? -1.0 : nanos / 1e6 / gib;
  }
}
