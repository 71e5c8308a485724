package io.memwire.verbscheck;

import io.memwire.shuffle.compat.ScalaCollections;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.storage.BlockManagerId;
import scala.Tuple2;
import scala.reflect.ClassTag$;

/** What serving its map outputs costs an executor's CPU while the other executor reads them. */
final class ServingCpuCheck {
  private ServingCpuCheck() {}

  /**
   * Map outputs all written by executor A (map tasks prefer A, locality wait 60 s); while A's only
   * core is held by a waiting task, executor B runs every reduce task; A's CPU time over the reduce
   * job (from /proc) is what serving its outputs cost A.
   */
  static void run(String mode, JavaSparkContext jsc, Map<String, Long> pids, CheckLog log)
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
      log.put(mode + ".servingCpu.servingExecutorCpuMs", cpu1 - cpu0);
      log.put(mode + ".servingCpu.readWallSeconds", String.format(Locale.ROOT, "%.1f", wall));
      log.put(mode + ".servingCpu.bytes", total);
      log.verdict(
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
}
