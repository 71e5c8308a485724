package io.memwire.verbscheck;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import scala.Tuple2;

/** A fault check: an executor killed while the other reads from it; the job must still be exact. */
final class ExecutorKilledCheck {
  private ExecutorKilledCheck() {}

  /**
   * The reducer on one executor kills the other executor's JVM before reading from it; the job must
   * still give the exact result (Spark reruns the lost map outputs).
   */
  static void run(JavaSparkContext jsc, Map<String, Long> pids, CheckLog log) throws Exception {
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
      log.put("verbs.executorKilled.fetchFailures", fetchFailures.get());
      log.put("verbs.executorKilled.stageRetries", resubmitted.get());
      log.verdict(
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
}
