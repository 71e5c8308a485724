package io.memwire.shuffle.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.ShuffleMetrics;
import io.memwire.shuffle.compat.ScalaCollections;
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
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import scala.Tuple2;

/**
 * Corrupt bytes on disk between the map and the reduce stage, with {@code
 * spark.shuffle.compress=false} (where Spark's sort shuffle returns a wrong answer silently): one
 * byte of every partition of one map output's data file flipped. Every reader, one-sided or local,
 * checks the stored checksums: the job returns the right answer after Spark reruns that map, and
 * the executors count the disk-cause mismatches. {@link IntegrityServiceClusterTest} runs the same
 * in service mode.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IntegrityClusterTest {
  LocalSparkCluster cluster;
  TaskMetricsListener listener;
  final AtomicInteger stageRetries = new AtomicInteger();
  JavaSparkContext jsc;

  /** Settings on top of the test's (a subclass: service mode). */
  Map<String, String> extraConf() throws IOException {
    return Map.of();
  }

  /** What a subclass checks after the job (the service's counters). */
  void checkAfterJob() {}

  @BeforeAll
  void start() throws IOException {
    Map<String, String> conf = new HashMap<>(extraConf());
    conf.put("spark.shuffle.compress", "false");
    conf.put("spark.shuffle.io.maxRetries", "1");
    conf.put("spark.shuffle.io.retryWait", "1s");
    cluster = Clusters.start(Clusters.MANAGER, conf);
    listener = new TaskMetricsListener();
    cluster.sparkContext().addSparkListener(listener);
    cluster
        .sparkContext()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onStageSubmitted(SparkListenerStageSubmitted s) {
                if (s.stageInfo().attemptNumber() > 0) {
                  stageRetries.incrementAndGet();
                }
              }
            });
    jsc = cluster.javaSparkContext();
  }

  @AfterAll
  void stop() throws InterruptedException {
    if (cluster != null) {
      cluster.close();
    }
  }

  /**
   * On one executor (the first by id that has any), flips one byte in every non-empty partition of
   * the first data file of {@code shuffleId}; returns the executor and the file.
   */
  private static String corruptOneDataFile(JavaSparkContext jsc, int shuffleId) {
    Map<String, String> done =
        new TreeMap<>(
            Clusters.onEveryExecutor(
                jsc,
                2,
                id -> {
                  List<Path> files = new ArrayList<>();
                  for (File dir : SparkEnv.get().blockManager().diskBlockManager().localDirs()) {
                    try (Stream<Path> s = Files.walk(dir.toPath())) {
                      s.filter(
                              p -> {
                                String n = p.getFileName().toString();
                                return n.startsWith("shuffle_" + shuffleId + "_")
                                    && n.endsWith("_0.data");
                              })
                          .forEach(files::add);
                    }
                  }
                  files.sort(null);
                  return files.isEmpty() ? "" : files.get(0).toString();
                }));
    for (Map.Entry<String, String> e : done.entrySet()) {
      if (!e.getValue().isEmpty()) {
        String data = e.getValue();
        String executor = e.getKey();
        Map<String, String> flipped =
            Clusters.onEveryExecutor(
                jsc, 2, id -> id.equals(executor) ? String.valueOf(flipEveryPartition(data)) : "");
        assertTrue(Integer.parseInt(flipped.get(executor)) > 0, flipped.toString());
        assertTrue(Files.exists(Path.of(data + ".flipped")), "flipped once");
        return executor + ":" + data + " (" + flipped + ", files " + done + ")";
      }
    }
    throw new AssertionError("no data file of shuffle " + shuffleId + ": " + done);
  }

  /** Flips the middle byte of every non-empty partition of a data file; returns how many. */
  private static int flipEveryPartition(String data) {
    Path d = Path.of(data);
    try {
      // EveryExecutor may run this more than once on an executor: flip once only.
      Files.createFile(Path.of(data + ".flipped"));
    } catch (java.nio.file.FileAlreadyExistsException e) {
      return Integer.MAX_VALUE;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String[] parts = d.getFileName().toString().split("_");
    Path index =
        ((org.apache.spark.shuffle.IndexShuffleBlockResolver)
                SparkEnv.get().shuffleManager().shuffleBlockResolver())
            .getIndexFile(
                Integer.parseInt(parts[1]), Long.parseLong(parts[2]), scala.Option.empty())
            .toPath();
    try (FileChannel ch = FileChannel.open(d, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      ByteBuffer idx = ByteBuffer.wrap(Files.readAllBytes(index));
      long[] off = new long[idx.remaining() / 8];
      idx.asLongBuffer().get(off);
      int n = 0;
      for (int r = 0; r + 1 < off.length; r++) {
        if (off[r + 1] > off[r]) {
          long at = (off[r] + off[r + 1]) / 2;
          ByteBuffer b = ByteBuffer.allocate(1);
          ch.read(b, at);
          b.put(0, (byte) ~b.get(0)).position(0);
          ch.write(b, at);
          n++;
        }
      }
      return n;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Test
  void aCorruptDataFileBetweenStagesGivesTheRightAnswerAfterOneMapRerun() throws Exception {
    List<Integer> data = ShuffleJobs.randomInts(60_000, 21, 1_000_000);
    JavaPairRDD<Integer, Long> sums =
        jsc.parallelize(data, 6)
            .mapToPair(x -> new Tuple2<>(x % 500, (long) x))
            .reduceByKey(Long::sum, 4);
    Map<Integer, Long> expected = FaultsTest.expectedSums(data, 500);
    assertEquals(expected, new HashMap<>(sums.collectAsMap()));
    int shuffleId =
        ((ShuffleDependency<?, ?, ?>) ScalaCollections.callSeq(sums.rdd(), "dependencies").get(0))
            .shuffleId();
    var before = Clusters.executorStats(jsc, 2);
    String corrupted = corruptOneDataFile(jsc, shuffleId);

    listener.reset();
    stageRetries.set(0);
    // The map stage is reused: reducers read the corrupt output, one-sided or locally.
    assertEquals(expected, new HashMap<>(sums.collectAsMap()), "corrupted " + corrupted);
    cluster.sparkContext().listenerBus().waitUntilEmpty(10_000);
    var after = Clusters.executorStats(jsc, 2);
    assertTrue(
        listener.fetchFailures.get() > 0,
        "expected fetch failures: " + corrupted + "\nbefore " + before + "\nafter " + after);
    assertTrue(stageRetries.get() >= 1, "the map stage reran");
    long disk =
        Clusters.sum(after, ShuffleMetrics.CHECKSUM_MISMATCHES_DISK)
            - Clusters.sum(before, ShuffleMetrics.CHECKSUM_MISMATCHES_DISK);
    assertTrue(disk > 0, after.toString());
    assertTrue(
        Clusters.sum(after, ShuffleMetrics.CHECKSUM_VERIFIED_BLOCKS) > 0,
        "one-sided blocks verified: " + after);
    assertEquals(0, Clusters.sum(after, ShuffleMetrics.CHECKSUM_UNVERIFIED_BLOCKS), "" + after);
    checkAfterJob();
  }
}
