package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
    Map<String, String> sort =
        MainJob.parse(Files.readString(work.resolve("result-spark-sort-1.json")));
    Map<String, String> memwire =
        MainJob.parse(Files.readString(work.resolve("result-memwire-tcp-1.json")));
    assertEquals(sort.get("resultDigest"), memwire.get("resultDigest"));
    // Round 2 ran in the same applications: the same answers, the first-job figures of round 1.
    Map<String, String> memwire2 =
        MainJob.parse(Files.readString(work.resolve("result-memwire-tcp-2.json")));
    assertEquals(memwire.get("resultDigest"), memwire2.get("resultDigest"));
    assertEquals(memwire.get("smallColdSeconds"), memwire2.get("smallColdSeconds"));
    assertTrue(Long.parseLong(memwire2.get("oneSidedBytes")) > 0, memwire2.toString());
    assertEquals(sort.get("smallDigest"), memwire.get("smallDigest"));
    assertEquals("io.memwire.shuffle.RdmaShuffleManager", memwire.get("shuffleManager"));
    long remote = Long.parseLong(memwire.get("remoteBytesRead"));
    assertTrue(remote > 0, memwire.toString());
    // The proof: the manager's own counters saw every remote byte arrive one-sided.
    assertEquals("1", memwire.get("counters"), memwire.toString());
    assertTrue(Long.parseLong(memwire.get("oneSidedBytes")) >= remote, memwire.toString());
    assertEquals("0", sort.get("counters"), "Spark's sort shuffle keeps no Memwire counters");
    assertTrue(Long.parseLong(memwire.get("main.outputsPublished")) > 0, memwire.toString());
    String comparison = Files.readString(work.resolve("comparison.txt"));
    assertTrue(comparison.contains("memwire-tcp"), comparison);
    assertTrue(comparison.contains("remains in every small job"), comparison);
  }

  private static MainJob.Result result(String name, String json) {
    return new MainJob.Result(name, MainJob.parse(json));
  }

  private static Map<String, List<MainJob.Result>> runs(
      MainJob.Result sort, MainJob.Result memwire) {
    Map<String, List<MainJob.Result>> m = new LinkedHashMap<>();
    m.put(sort.name, List.of(sort));
    m.put(memwire.name, List.of(memwire));
    return m;
  }

  @Test
  void differingResultsOrBytesNotOneSidedFailTheRun() throws Exception {
    Path dir = Files.createDirectories(work.resolve("cmp"));
    String common = "\"wallSeconds\":1.0,\"resultRows\":10,\"smallDigest\":\"s\",";
    MainJob.Result a =
        result(
            "spark-sort",
            "{" + common + "\"resultDigest\":\"aa\",\"remoteBytesRead\":5,\"counters\":0}");
    String proof =
        ",\"counters\":1,\"allRemoteBytes\":9,\"allOneSidedBytes\":9,"
            + "\"allFallbackBlocks\":0,\"allFailedBlocks\":0}";
    MainJob.Result b =
        result(
            "memwire-tcp", "{" + common + "\"resultDigest\":\"ab\",\"remoteBytesRead\":5" + proof);
    assertEquals(1, MainJob.report(runs(a, b), dir), "results differ");
    MainJob.Result c =
        result(
            "memwire-tcp", "{" + common + "\"resultDigest\":\"aa\",\"remoteBytesRead\":0" + proof);
    assertEquals(1, MainJob.report(runs(a, c), dir), "no remote bytes read");
    MainJob.Result d =
        result(
            "memwire-tcp", "{" + common + "\"resultDigest\":\"aa\",\"remoteBytesRead\":7" + proof);
    assertEquals(0, MainJob.report(runs(a, d), dir));
    MainJob.Result e =
        result(
            "memwire-tcp",
            "{"
                + common
                + "\"resultDigest\":\"aa\",\"remoteBytesRead\":7"
                + proof.replace("\"allOneSidedBytes\":9", "\"allOneSidedBytes\":4"));
    assertEquals(1, MainJob.report(runs(a, e), dir), "remote bytes not one-sided");
    MainJob.Result f =
        result(
            "memwire-tcp",
            "{"
                + common
                + "\"resultDigest\":\"aa\",\"remoteBytesRead\":7"
                + proof.replace("\"allFallbackBlocks\":0", "\"allFallbackBlocks\":3"));
    assertEquals(1, MainJob.report(runs(a, f), dir), "blocks fell back");
  }

  @Test
  void configurationsAreValidated() {
    Path jar = Paths.get("memwire.jar");
    assertEquals(
        List.of("spark-sort-hostlocal", "memwire-tcp"),
        MainJob.configs("spark-sort-hostlocal,memwire", "tcp", jar).stream()
            .map(MainJob.Config::name)
            .toList());
    assertTrue(
        MainJob.configs("spark-sort,memwire-hostlocal", "tcp", jar)
            .get(1)
            .args()
            .contains("spark.shuffle.readHostLocalDisk=true"));
    IllegalArgumentException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class,
            () -> MainJob.configs("memwire,spark-sort", "tcp", jar));
    assertTrue(e.getMessage().contains("reference"), e.getMessage());
    e =
        org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> MainJob.configs("spark-sort,netty", "tcp", jar));
    assertTrue(e.getMessage().contains("unknown configuration 'netty'"), e.getMessage());
  }
}
