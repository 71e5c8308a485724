package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleMetrics;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.spark.FetchFailed;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import scala.Option;

/**
 * Corrupting real map outputs between the map and the reduce stage, and what the integrity cases
 * check afterwards: the right answer, the map stage rerun once, the fetch failures naming the
 * checksum mismatch, the executors' disk-cause counter. Shared by the cluster tests that reuse
 * their own context for these cases ({@link IntegrityClusterTest}, {@link FaultsTest}, {@link
 * ShuffleServiceClusterTest}), so no case starts a Spark context of its own.
 */
final class IntegrityFaults {
  private IntegrityFaults() {}

  /**
   * Tag of the integrity cases beyond the default suite's (compression, batch fetch, fetch to disk,
   * each mode): run with {@code -Pintegrity-extra} (README, "Tests").
   */
  static final String EXTRA = "integrity-extra";

  /** Counts fetch failures (and those saying "checksum mismatch") and map-stage reruns. */
  static final class Listener extends SparkListener {
    final AtomicInteger fetchFailures = new AtomicInteger();
    final AtomicInteger checksumFetchFailures = new AtomicInteger();
    final AtomicInteger mapStageReruns = new AtomicInteger();
    final AtomicInteger mapTasksRerun = new AtomicInteger();
    private final Set<String> rerunMapStages = java.util.concurrent.ConcurrentHashMap.newKeySet();
    final List<String> failureMessages = java.util.Collections.synchronizedList(new ArrayList<>());

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted s) {
      if (s.stageInfo().attemptNumber() > 0 && s.stageInfo().shuffleDepId().isDefined()) {
        mapStageReruns.incrementAndGet();
        rerunMapStages.add(s.stageInfo().stageId() + "." + s.stageInfo().attemptNumber());
      }
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
      if (end.reason() instanceof FetchFailed f) {
        fetchFailures.incrementAndGet();
        String m = String.valueOf(f.message());
        failureMessages.add(m);
        if (m.contains("checksum mismatch")) {
          checksumFetchFailures.incrementAndGet();
        }
      } else if (rerunMapStages.contains(end.stageId() + "." + end.stageAttemptId())) {
        mapTasksRerun.incrementAndGet();
      }
    }

    void reset() {
      fetchFailures.set(0);
      checksumFetchFailures.set(0);
      mapStageReruns.set(0);
      mapTasksRerun.set(0);
      rerunMapStages.clear();
      failureMessages.clear();
    }

    @Override
    public String toString() {
      return "fetch failures "
          + fetchFailures
          + " (checksum "
          + checksumFetchFailures
          + "), map stage reruns "
          + mapStageReruns
          + ", map tasks rerun "
          + mapTasksRerun
          + ", messages "
          + failureMessages;
    }
  }

  /** What a case corrupts between the stages; returns a description for failure messages. */
  interface Corruption {
    String apply(int shuffleId) throws Exception;
  }

  /**
   * Runs {@code job} once (the map stage and a clean read), corrupts the output of its newest
   * shuffle, runs the same job again (the map stage reused, the reducers reading the corrupt bytes)
   * and checks: the right answer both times, fetch failures that say "checksum mismatch", a rerun
   * of the map stage (one, or two when failures straddle Spark's resubmit) and the executors'
   * disk-cause mismatches counted.
   *
   * @return the executors' counters after the second run
   */
  static <T> Map<String, Map<String, Long>> corruptBetweenRuns(
      String what,
      JavaSparkContext jsc,
      Listener listener,
      Callable<T> job,
      T expected,
      Corruption corruption)
      throws Exception {
    assertEquals(expected, job.call(), what + ": the clean run");
    int shuffleId = newestShuffle(jsc);
    var before = Clusters.executorStats(jsc, 2);
    String corrupted = corruption.apply(shuffleId);
    jsc.sc().listenerBus().waitUntilEmpty(10_000);
    listener.reset();
    assertEquals(expected, job.call(), what + ": corrupted " + corrupted);
    jsc.sc().listenerBus().waitUntilEmpty(10_000);
    var after = Clusters.executorStats(jsc, 2);
    String state =
        what + ": " + corrupted + "; " + listener + "\nbefore " + before + "\nafter " + after;
    assertTrue(listener.checksumFetchFailures.get() > 0, state);
    // Once; twice when a fetch failure reaches Spark's scheduler after its 200 ms resubmit of the
    // map stage, which the machine's timing decides. Never a wrong answer.
    int reruns = listener.mapStageReruns.get();
    assertTrue(reruns == 1 || reruns == 2, "the map stage reran once or twice: " + state);
    assertTrue(listener.mapTasksRerun.get() >= 1, state);
    assertTrue(
        delta(before, after, ShuffleMetrics.CHECKSUM_MISMATCHES_DISK) > 0,
        "disk-cause mismatches counted: " + state);
    return after;
  }

  static long delta(
      Map<String, Map<String, Long>> before,
      Map<String, Map<String, Long>> after,
      io.memwire.transfer.metrics.Metric m) {
    return Clusters.sum(after, m) - Clusters.sum(before, m);
  }

  /** The highest shuffle id with a data or index file on any executor. */
  static int newestShuffle(JavaSparkContext jsc) {
    Map<String, String> ids =
        Clusters.onEveryExecutor(
            jsc,
            2,
            id -> {
              int max = -1;
              for (Path f : shuffleFiles("")) {
                String[] parts = f.getFileName().toString().split("_");
                max = Math.max(max, Integer.parseInt(parts[1]));
              }
              return String.valueOf(max);
            });
    int max = ids.values().stream().mapToInt(Integer::parseInt).max().orElse(-1);
    assertTrue(max >= 0, "no shuffle files: " + ids);
    return max;
  }

  /** This executor's files named {@code shuffle_<prefix>...} ending in {@code _0.index}. */
  private static List<Path> shuffleFiles(String prefix) throws IOException {
    List<Path> files = new ArrayList<>();
    for (File dir : SparkEnv.get().blockManager().diskBlockManager().localDirs()) {
      try (Stream<Path> s = Files.walk(dir.toPath())) {
        s.filter(
                p -> {
                  String n = p.getFileName().toString();
                  return n.startsWith("shuffle_" + prefix) && n.endsWith("_0.index");
                })
            .forEach(files::add);
      }
    }
    files.sort(null);
    return files;
  }

  /**
   * On one executor (the first by id that has any), flips one byte in every non-empty partition of
   * the first data file of {@code shuffleId}; returns the executor and the file.
   */
  static String corruptDataFile(JavaSparkContext jsc, int shuffleId) {
    return onFirstOutput(jsc, shuffleId, IntegrityFaults::flipDataOnExecutor);
  }

  /**
   * On one executor, flips one bit of the stored checksum of every non-empty partition in the first
   * checksum file of {@code shuffleId} (the data file stays right).
   */
  static String corruptChecksumFile(JavaSparkContext jsc, int shuffleId) {
    return onFirstOutput(jsc, shuffleId, IntegrityFaults::flipChecksumsOnExecutor);
  }

  /** A change made once to one output's files on an executor; returns how many partitions. */
  private interface OutputChange extends java.io.Serializable {
    int apply(int shuffleId, long mapId) throws IOException;
  }

  private static String onFirstOutput(JavaSparkContext jsc, int shuffleId, OutputChange change) {
    Map<String, String> found =
        new TreeMap<>(
            Clusters.onEveryExecutor(
                jsc,
                2,
                id -> {
                  List<Path> files = shuffleFiles(shuffleId + "_");
                  return files.isEmpty() ? "" : files.get(0).getFileName().toString();
                }));
    for (Map.Entry<String, String> e : found.entrySet()) {
      if (!e.getValue().isEmpty()) {
        String executor = e.getKey();
        long mapId = Long.parseLong(e.getValue().split("_")[2]);
        Map<String, String> changed =
            Clusters.onEveryExecutor(
                jsc,
                2,
                id -> id.equals(executor) ? String.valueOf(once(shuffleId, mapId, change)) : "");
        assertTrue(Integer.parseInt(changed.get(executor)) > 0, changed.toString());
        return "executor " + executor + " map " + mapId + " (" + changed + ", files " + found + ")";
      }
    }
    throw new AssertionError("no output of shuffle " + shuffleId + ": " + found);
  }

  /** Runs {@code change} once per output: EveryExecutor may run a task more than once. */
  private static int once(int shuffleId, long mapId, OutputChange change) throws IOException {
    File index = resolver().getIndexFile(shuffleId, mapId, Option.empty());
    try {
      Files.createFile(Path.of(index + ".changed"));
    } catch (java.nio.file.FileAlreadyExistsException e) {
      return Integer.MAX_VALUE;
    }
    return change.apply(shuffleId, mapId);
  }

  private static IndexShuffleBlockResolver resolver() {
    return (IndexShuffleBlockResolver) SparkEnv.get().shuffleManager().shuffleBlockResolver();
  }

  private static int flipDataOnExecutor(int shuffleId, long mapId) throws IOException {
    return flipEveryPartition(
        resolver().getDataFile(shuffleId, mapId).toPath(),
        resolver().getIndexFile(shuffleId, mapId, Option.empty()).toPath());
  }

  private static int flipChecksumsOnExecutor(int shuffleId, long mapId) throws IOException {
    String algorithm = SparkEnv.get().conf().get("spark.shuffle.checksum.algorithm", "ADLER32");
    Path sums = resolver().getChecksumFile(shuffleId, mapId, algorithm, Option.empty()).toPath();
    long[] off = offsets(resolver().getIndexFile(shuffleId, mapId, Option.empty()).toPath());
    int n = 0;
    try (FileChannel ch =
        FileChannel.open(sums, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      for (int r = 0; r + 1 < off.length; r++) {
        if (off[r + 1] > off[r]) {
          flip(ch, r * 8L + 7); // the low byte of partition r's big-endian long
          n++;
        }
      }
    }
    return n;
  }

  /** Flips the middle byte of every non-empty partition of a data file; returns how many. */
  static int flipEveryPartition(Path data, Path index) throws IOException {
    long[] off = offsets(index);
    int n = 0;
    try (FileChannel ch =
        FileChannel.open(data, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      for (int r = 0; r + 1 < off.length; r++) {
        if (off[r + 1] > off[r]) {
          flip(ch, (off[r] + off[r + 1]) / 2);
          n++;
        }
      }
    }
    return n;
  }

  private static long[] offsets(Path index) throws IOException {
    ByteBuffer idx = ByteBuffer.wrap(Files.readAllBytes(index));
    long[] off = new long[idx.remaining() / 8];
    idx.asLongBuffer().get(off);
    return off;
  }

  private static void flip(FileChannel ch, long at) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(1);
    ch.read(b, at);
    b.put(0, (byte) ~b.get(0)).position(0);
    ch.write(b, at);
  }

  /**
   * In service mode, from the test's own process: flips every non-empty partition of the first data
   * file of {@code shuffleId} the service holds under {@code outputs} (its hard links of the
   * executors' files, so the bytes it serves).
   */
  static String corruptServiceDataFile(Path outputs, int shuffleId) {
    try (Stream<Path> s = Files.walk(outputs)) {
      List<Path> data = new ArrayList<>();
      s.filter(
              p -> {
                String n = p.getFileName().toString();
                return n.startsWith("shuffle_" + shuffleId + "_") && n.endsWith(".data");
              })
          .forEach(data::add);
      data.sort(null);
      assertTrue(!data.isEmpty(), "the service holds no data file of shuffle " + shuffleId);
      Path d = data.get(0);
      String n = d.getFileName().toString();
      Path index = d.resolveSibling(n.substring(0, n.length() - ".data".length()) + ".index");
      int flipped = flipEveryPartition(d, index);
      assertTrue(flipped > 0, d.toString());
      return d + " (" + flipped + " partitions)";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The newest shuffle id among the data files the service holds under {@code outputs}. */
  static int newestServiceShuffle(Path outputs) throws IOException {
    try (Stream<Path> s = Files.walk(outputs)) {
      return s.map(p -> p.getFileName().toString())
          .filter(n -> n.startsWith("shuffle_") && n.endsWith(".data"))
          .mapToInt(n -> Integer.parseInt(n.split("_")[1]))
          .max()
          .orElseThrow(() -> new AssertionError("the service holds no data file"));
    }
  }

  // ---- jobs ----

  /**
   * A grouped sum in SQL whose reduce side AQE coalesces into a few tasks, each reading a range of
   * reduce partitions per map output: batch fetch ({@code shuffle_S_M_A_B}) with {@code partitions}
   * shuffle partitions.
   */
  static final class BatchJob implements Callable<Map<Long, Long>> {
    private final SparkSession session;
    private final Map<String, String> conf;
    private final Dataset<Row> ds;

    BatchJob(SparkSession s, long rows, int keys, int partitions) {
      this.session = s;
      this.conf = batchConf(partitions);
      // The plan (and its shuffle) is made once: a second collect reuses the map stage.
      ds =
          withConf(
              () -> {
                Dataset<Row> d =
                    s.range(0, rows, 1, 6)
                        .selectExpr("id % " + keys + " AS k", "id AS v")
                        .groupBy("k")
                        .sum("v");
                d.queryExecution().executedPlan();
                return d;
              });
    }

    /** Runs {@code body} with this job's SQL settings (AQE reads them while the job runs). */
    private <R> R withConf(java.util.function.Supplier<R> body) {
      Map<String, String> old = new HashMap<>();
      conf.forEach((k, v) -> old.put(k, session.conf().get(k, null)));
      conf.forEach((k, v) -> session.conf().set(k, v));
      try {
        return body.get();
      } finally {
        old.forEach(
            (k, v) -> {
              if (v == null) {
                session.conf().unset(k);
              } else {
                session.conf().set(k, v);
              }
            });
      }
    }

    private static Map<String, String> batchConf(int partitions) {
      Map<String, String> c = new HashMap<>();
      c.put("spark.sql.adaptive.enabled", "true");
      c.put("spark.sql.shuffle.partitions", String.valueOf(partitions));
      c.put("spark.sql.adaptive.coalescePartitions.enabled", "true");
      c.put("spark.sql.adaptive.coalescePartitions.parallelismFirst", "false");
      c.put("spark.sql.adaptive.advisoryPartitionSizeInBytes", "64k");
      c.put("spark.sql.adaptive.coalescePartitions.minPartitionSize", "1k");
      c.put("spark.sql.adaptive.fetchShuffleBlocksInBatch", "true");
      return c;
    }

    static Map<Long, Long> expected(long rows, int keys) {
      Map<Long, Long> m = new HashMap<>();
      for (long id = 0; id < rows; id++) {
        m.merge(id % keys, id, Long::sum);
      }
      return m;
    }

    @Override
    public Map<Long, Long> call() {
      return withConf(
          () -> {
            Map<Long, Long> out = new HashMap<>();
            for (Row r : ds.collectAsList()) {
              out.put(r.getLong(0), r.getLong(1));
            }
            return out;
          });
    }
  }
}
