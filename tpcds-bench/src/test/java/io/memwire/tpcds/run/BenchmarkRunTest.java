package io.memwire.tpcds.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.tpcds.verify.AnswerMismatchException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runner end to end at SF 0.01: one local multi-process cluster per configuration, data
 * generated then reused, queries run and verified, report and charts written; a configuration that
 * drops rows is caught.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class BenchmarkRunTest {

  @TempDir static Path work;

  /**
   * q3 and q7 have non-empty answers at SF 0.01 (20 and 100 rows) and shuffle with broadcast joins
   * off.
   */
  private static RunOptions options(String configs, String queries, int warmups) {
    return options(configs, queries, warmups, 1);
  }

  private static RunOptions options(String configs, String queries, int warmups, int sessions) {
    return RunOptions.parse(
        "--sessions",
        String.valueOf(sessions),
        "--scale",
        "0.01",
        "--queries",
        queries,
        "--warmup",
        String.valueOf(warmups),
        "--iterations",
        "1",
        "--configs",
        configs,
        "--no-broadcast",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "--executor-memory",
        "512",
        "--driver-memory",
        "768",
        "--query-timeout",
        "300",
        "--data-dir",
        work.resolve("data").toString(),
        "--out",
        work.resolve("out").toString());
  }

  @Test
  @Order(1)
  @Timeout(value = 25, unit = TimeUnit.MINUTES)
  void runsQueriesWithSortAndRdmaShuffleVerifiesAnswersAndWritesTheReport() throws Exception {
    List<String> progress = new CopyOnWriteArrayList<>();
    Consumer<String> log =
        line -> {
          progress.add(line);
          System.out.println(line);
        };
    RunOptions options = options("sort,rdma-tcp", "q3,q7", 1);
    RunResult result = new BenchmarkRun(options, log).run();

    assertTrue(result.verified());
    assertTrue(result.dataSet().generated(), "first run generates the data");
    assertEquals(24, result.dataSet().rowCounts().size());
    assertTrue(
        result.dataSet().rowCounts().values().stream().allMatch(n -> n > 0),
        "every table has rows");
    assertTrue(
        progress.stream().anyMatch(l -> l.contains("generated TPC-DS data at scale 0.01")),
        progress.toString());
    assertTrue(
        progress.stream().anyMatch(l -> l.contains("sort: generated store_sales")),
        "generation reports each table");

    // 2 queries x 2 configurations x (1 warm-up + 1 timed)
    assertEquals(8, result.measurements().size());
    for (Measurement m : result.measurements()) {
      assertTrue(m.rows() > 0, m + " returned no rows: the comparison would prove nothing");
      assertTrue(m.metrics().bytesWritten() > 0, m + " wrote no shuffle bytes");
      assertEquals(m.metrics().bytesWritten() > 0, m.metrics().bytesRead() > 0, m.toString());
      // The split of the tasks' time: CPU, and the reduce side's share of the run time.
      assertTrue(m.metrics().executorCpuMs() > 0, m.toString());
      assertTrue(
          m.metrics().readTaskRunMs() > 0
              && m.metrics().readTaskRunMs() < m.metrics().executorRunMs(),
          m.toString());
    }
    assertTrue(
        result.measurements().stream().anyMatch(m -> m.metrics().remoteBytesRead() > 0),
        "with two executors some shuffle blocks are read remotely");
    // The proof: Memwire's own counters show its remote bytes arriving one-sided; sort keeps none.
    for (Measurement m : result.measurements()) {
      if (m.config().equals("rdma-tcp")) {
        assertNotNull(m.path(), m.toString());
        assertTrue(m.path().oneSidedBytes() >= m.metrics().remoteBytesRead(), m.toString());
        assertEquals(0, m.path().fallbackBlocks(), m.toString());
        // The size histogram accounts for every block and byte read one-sided.
        assertEquals(m.path().oneSidedBlocks(), m.path().blockSizes().totalBlocks(), m.toString());
        assertEquals(m.path().oneSidedBytes(), m.path().blockSizes().totalBytes(), m.toString());
      } else {
        assertNull(m.path(), m.toString());
      }
    }
    assertTrue(
        result.measurements().stream()
            .anyMatch(m -> m.path() != null && m.path().oneSidedBytes() > 0));
    assertEquals(4, result.stats().size());
    assertNotNull(result.geomeanSpeedup().get("rdma-tcp"));
    assertTrue(
        result.clusters().stream()
            .allMatch(c -> c.executors() == 2 && c.sparkVersion().startsWith("4.")));

    Path dir = Path.of(result.runDir());
    for (String file :
        List.of(
            "measurements.csv",
            "summary.csv",
            "results.json",
            "block-sizes.csv",
            "report.md",
            "charts/query-times.png",
            "charts/fetch-wait.png",
            "answers/q3.json")) {
      assertTrue(Files.size(dir.resolve(file)) > 0, file + " is empty");
    }
    assertEquals(9, Files.readAllLines(dir.resolve("measurements.csv")).size());
    String report = Files.readString(dir.resolve("report.md"));
    assertTrue(report.contains("### q7"), report);
    assertTrue(report.contains("Geometric-mean speedup of `rdma-tcp`"), report);
    assertTrue(report.contains("## Which path moved the bytes"), report);
    assertTrue(report.contains("## Sizes of the blocks read one-sided"), report);
    List<String> sizes = Files.readAllLines(dir.resolve("block-sizes.csv"));
    assertEquals("config,query,bucket,blocks,bytes", sizes.get(0));
    assertTrue(sizes.size() > 1 && sizes.stream().skip(1).allMatch(l -> l.startsWith("rdma-tcp,")));
    assertTrue(
        Files.readAllLines(dir.resolve("measurements.csv")).get(0).contains("one_sided_bytes"));
    assertTrue(isPng(dir.resolve("charts/query-times.png")));
    assertTrue(
        progress.stream().anyMatch(l -> l.contains("timed 1/1") && l.contains("q7")),
        progress.toString());
    assertNoProcessesLeft();
  }

  @Test
  @Order(2)
  @Timeout(value = 25, unit = TimeUnit.MINUTES)
  void aManagerThatDropsRowsIsCaughtByVerification() throws Exception {
    List<String> progress = new CopyOnWriteArrayList<>();
    Consumer<String> log =
        line -> {
          progress.add(line);
          System.out.println(line);
        };
    RunOptions options =
        options("sort,dropping{manager=io.memwire.tpcds.RowDroppingShuffleManager}", "q3", 0);
    AnswerMismatchException e =
        assertThrows(AnswerMismatchException.class, () -> new BenchmarkRun(options, log).run());
    assertTrue(e.getMessage().contains("'dropping' differs from reference 'sort'"), e.getMessage());
    assertTrue(
        progress.stream().anyMatch(l -> l.contains("reused TPC-DS data at scale 0.01")),
        progress.toString());
    Path runDir = latestRun();
    assertTrue(Files.readString(runDir.resolve("mismatch.txt")).contains("ANSWER MISMATCH"));
    assertTrue(Files.readString(runDir.resolve("report.md")).contains("RUN FAILED"));
    assertNoProcessesLeft();
  }

  /** Also runs two sessions: clusters restarted, the failed query left out of the second. */
  @Test
  @Order(3)
  @Timeout(value = 25, unit = TimeUnit.MINUTES)
  void aQueryThatFailsToRunIsRecordedAndTheRunGoesOn() throws Exception {
    RunOptions options =
        options(
            "sort,failing{manager=io.memwire.tpcds.QueryFailingShuffleManager;"
                + "spark.memwire.test.failQuery=q3;spark.task.maxFailures=1}",
            "q3,q7",
            0,
            2);
    List<String> progress = new CopyOnWriteArrayList<>();
    RunResult result =
        new BenchmarkRun(
                options,
                line -> {
                  progress.add(line);
                  System.out.println(line);
                })
            .run();
    assertTrue(result.verified(), "q7 still verified: " + result.failure());
    assertEquals(1, result.failures().size(), result.failures().toString());
    QueryFailure f = result.failures().get(0);
    assertEquals("q3", f.query());
    assertEquals("failing", f.config());
    assertTrue(f.error().contains("shuffle reads of q3 fail"), f.error());
    assertTrue(
        result.measurements().stream()
            .anyMatch(m -> m.query().equals("q7") && m.config().equals("failing")),
        "the run went on to q7");
    Path dir = Path.of(result.runDir());
    String report = Files.readString(dir.resolve("report.md"));
    assertTrue(report.contains("## Queries that failed to run"), report);
    assertTrue(report.contains("1 of 2 queries failed to run"), report);
    assertTrue(Files.readString(dir.resolve("failures.csv")).contains("q3,failing,0,"));

    // Session 1 is round 0, session 2 round 1, each on clusters of its own; q3 is not run again.
    assertEquals(
        List.of("q3 sort 0 0", "q7 sort 0 0", "q7 failing 0 0", "q7 failing 1 1", "q7 sort 1 1"),
        result.measurements().stream()
            .map(m -> m.query() + " " + m.config() + " " + m.session() + " " + m.round())
            .toList());
    assertEquals(
        2,
        progress.stream()
            .filter(l -> l.contains("starting local-cluster") && l.contains("for failing"))
            .count());
    assertTrue(Files.size(dir.resolve("logs").resolve("failing-s2.log")) > 0);
    assertTrue(report.contains("2 sessions (clusters started afresh for each)"), report);
    assertTrue(report.contains("| failing | 2 | 1 |"), report);
    assertEquals(
        "query,config,session,round",
        Files.readAllLines(dir.resolve("measurements.csv")).get(0).substring(0, 26));
    List<String> sessions = Files.readAllLines(dir.resolve("paired-sessions.csv"));
    assertEquals(3, sessions.size(), sessions.toString());
    assertTrue(sessions.get(2).startsWith("failing,1,1,"), sessions.toString());
    assertNoProcessesLeft();
  }

  private static Path latestRun() throws IOException {
    try (Stream<Path> runs = Files.list(work.resolve("out"))) {
      return runs.max(Path::compareTo).orElseThrow();
    }
  }

  private static boolean isPng(Path file) throws IOException {
    byte[] head = Files.readAllBytes(file);
    return head.length > 8 && head[1] == 'P' && head[2] == 'N' && head[3] == 'G';
  }

  private static void assertNoProcessesLeft() {
    assertFalse(
        ProcessHandle.current().descendants().anyMatch(ProcessHandle::isAlive),
        "worker or executor processes left running");
  }
}
