package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's main-job command, at a small size: both spark-submit runs succeed on a
 * two-executor local cluster, their results are identical, and the Memwire run read remote
 * shuffle bytes. Runs after packaging (failsafe), when the Spark runtime and jars exist.
 */
class MainJobIT {
  @TempDir Path work;

  @Test
  void mainJobRunsBothShuffleManagersWithIdenticalResults() throws Exception {
    Path target = Paths.get("target");
    String version = System.getProperty("project.version");
    int rc = MainJob.run(new String[] {
        "--spark-home", target.resolve("spark-home").toString(),
        "--app-jar", target.resolve("memwire-main-job-" + version + ".jar").toString(),
        "--memwire-jar", Paths.get("..", "shuffle-manager", "target",
            "memwire-shuffle-manager-" + version + "-spark.jar").toString(),
        "--records", "40000",
        "--work-dir", work.toString(),
        "--timeout-minutes", "8"});
    assertEquals(0, rc, "main job exit status");
    Map<String, String> sort = MainJob.parse(Files.readString(work.resolve("result-spark-sort.json")));
    Map<String, String> memwire =
        MainJob.parse(Files.readString(work.resolve("result-memwire-tcp.json")));
    assertEquals(sort.get("resultDigest"), memwire.get("resultDigest"));
    assertEquals("io.memwire.shuffle.RdmaShuffleManager", memwire.get("shuffleManager"));
    assertTrue(Long.parseLong(memwire.get("remoteBytesRead")) > 0, memwire.toString());
    assertTrue(Files.readString(work.resolve("comparison.txt")).contains("memwire-tcp"));
  }

  @Test
  void differingResultsFailTheRun() throws Exception {
    Path dir = Files.createDirectories(work.resolve("cmp"));
    MainJob.Result a = new MainJob.Result("spark-sort", MainJob.parse(
        "{\"wallSeconds\":1.0,\"resultRows\":10,\"resultDigest\":\"aa\",\"remoteBytesRead\":5}"));
    MainJob.Result b = new MainJob.Result("memwire-tcp", MainJob.parse(
        "{\"wallSeconds\":1.0,\"resultRows\":10,\"resultDigest\":\"ab\",\"remoteBytesRead\":5}"));
    assertEquals(1, MainJob.report(java.util.List.of(a, b), dir));
    MainJob.Result c = new MainJob.Result("memwire-tcp", MainJob.parse(
        "{\"wallSeconds\":1.0,\"resultRows\":10,\"resultDigest\":\"aa\",\"remoteBytesRead\":0}"));
    assertEquals(1, MainJob.report(java.util.List.of(a, c), dir), "no remote bytes read");
    MainJob.Result d = new MainJob.Result("memwire-tcp", MainJob.parse(
        "{\"wallSeconds\":1.0,\"resultRows\":10,\"resultDigest\":\"aa\",\"remoteBytesRead\":7}"));
    assertEquals(0, MainJob.report(java.util.List.of(a, d), dir));
  }
}
