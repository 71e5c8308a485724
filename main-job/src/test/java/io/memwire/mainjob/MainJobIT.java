package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's main-job command, at a small size: both spark-submit runs succeed on a two-executor
 * local cluster, their results are identical, and the Memwire run read its remote shuffle bytes
 * one-sided (the manager's own counters say so). Runs after packaging (failsafe), when the Spark
 * runtime and jars exist.
 */
class MainJobIT {
  @TempDir Path work;

  @Test
  void mainJobRunsBothShuffleManagersWithIdenticalResults() throws Exception {
    Path target = Paths.get("target");
    String version = System.getProperty("project.version");
    int rc =
        MainJob.run(
            new String[] {
              "--spark-home",
              target.resolve("spark-home").toString(),
              "--app-jar",
              target.resolve("memwire-main-job-" + version + ".jar").toString(),
              "--memwire-jar",
              Paths.get(
                      "..",
                      "shuffle-manager",
                      "target",
                      "memwire-shuffle-manager-" + version + "-spark.jar")
                  .toString(),
              "--records",
              "40000",
              "--rounds",
              "2",
              "--small-repeats",
              "1",
              "--work-dir",
              work.toString(),
              "--timeout-minutes",
              "8"
            });
    assertEquals(0, rc, "main job exit status");
    ShuffleAppResult sort = ShuffleAppResult.read(work.resolve("result-spark-sort-1.json"));
    ShuffleAppResult memwire = ShuffleAppResult.read(work.resolve("result-memwire-tcp-1.json"));
    assertEquals(sort.resultDigest(), memwire.resultDigest());
    // Round 2 ran in the same applications: the same answers, the first-job figures of round 1.
    ShuffleAppResult memwire2 = ShuffleAppResult.read(work.resolve("result-memwire-tcp-2.json"));
    assertEquals(memwire.resultDigest(), memwire2.resultDigest());
    assertEquals(memwire.smallColdSeconds(), memwire2.smallColdSeconds());
    assertTrue(memwire2.oneSidedBytes() > 0, memwire2.toString());
    assertEquals(sort.smallDigest(), memwire.smallDigest());
    assertEquals("io.memwire.shuffle.RdmaShuffleManager", memwire.shuffleManager());
    long remote = memwire.remoteBytesRead();
    assertTrue(remote > 0, memwire.toString());
    // The proof: the manager's own counters saw every remote byte arrive one-sided.
    assertTrue(memwire.managerCounters(), memwire.toString());
    assertTrue(memwire.oneSidedBytes() >= remote, memwire.toString());
    assertFalse(sort.managerCounters(), "Spark's sort shuffle keeps no Memwire counters");
    assertTrue(memwire.main().outputsPublished() > 0, memwire.toString());
    String comparison = Files.readString(work.resolve("comparison.txt"));
    assertTrue(comparison.contains("memwire-tcp"), comparison);
    assertTrue(comparison.contains("remains in every small job"), comparison);
  }
}
