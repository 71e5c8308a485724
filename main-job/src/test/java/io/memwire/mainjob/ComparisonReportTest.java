package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The launcher's verdict: identical results, and Memwire's remote bytes all one-sided. */
class ComparisonReportTest {
  @TempDir Path work;

  private static Map<String, List<ShuffleAppResult>> runs(
      ShuffleAppResult sort, ShuffleAppResult memwire) {
    Map<String, List<ShuffleAppResult>> m = new LinkedHashMap<>();
    m.put("spark-sort", List.of(sort));
    m.put("memwire-tcp", List.of(memwire));
    return m;
  }

  @Test
  void differingResultsOrBytesNotOneSidedFailTheRun() throws Exception {
    Path dir = Files.createDirectories(work.resolve("cmp"));
    ShuffleAppResult a = ShuffleAppResultTest.result("aa", 5, false, 0, 0);
    ShuffleAppResult b = ShuffleAppResultTest.result("ab", 5, true, 9, 0);
    assertEquals(1, ComparisonReport.report(runs(a, b), dir), "results differ");
    ShuffleAppResult c = ShuffleAppResultTest.result("aa", 0, true, 9, 0);
    assertEquals(1, ComparisonReport.report(runs(a, c), dir), "no remote bytes read");
    ShuffleAppResult d = ShuffleAppResultTest.result("aa", 7, true, 9, 0);
    assertEquals(0, ComparisonReport.report(runs(a, d), dir));
    ShuffleAppResult e = ShuffleAppResultTest.result("aa", 7, true, 4, 0);
    assertEquals(1, ComparisonReport.report(runs(a, e), dir), "remote bytes not one-sided");
    ShuffleAppResult f = ShuffleAppResultTest.result("aa", 7, true, 9, 3);
    assertEquals(1, ComparisonReport.report(runs(a, f), dir), "blocks fell back");
  }

  @Test
  void theFirstJobsLineGivesPublishingAndTheCpuDifferences() throws Exception {
    ShuffleAppResult sort =
        withCold(
            ShuffleAppResultTest.full(),
            new ShuffleAppResult.JobCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10_000, 6_000));
    ShuffleAppResult memwire =
        withCold(
            ShuffleAppResultTest.full(),
            new ShuffleAppResult.JobCounters(
                57, 57, 57, 0, 0, 98, 0, 0, 0, 0, 180_000, 11_500, 6_250));
    String s = ComparisonReport.fixedCosts(List.of(sort), List.of(memwire));
    assertTrue(
        s.contains(
            "directory slot reads 57, index reads 57, publishing 180 ms in map tasks; the first"
                + " job's executor CPU +1.50 s, of it JIT compilers +0.25 s"),
        s);

    // Without /proc (-1) the CPU part is left out rather than printed as no difference.
    ShuffleAppResult unmeasured =
        withCold(
            ShuffleAppResultTest.full(),
            new ShuffleAppResult.JobCounters(57, 57, 57, 0, 0, 98, 0, 0, 0, 0, 180_000, -1, -1));
    String u = ComparisonReport.fixedCosts(List.of(sort), List.of(unmeasured));
    assertTrue(u.contains("publishing 180 ms in map tasks\n"), u);
  }

  private static ShuffleAppResult withCold(ShuffleAppResult r, ShuffleAppResult.JobCounters cold)
      throws Exception {
    ObjectMapper json = new ObjectMapper();
    ObjectNode n = (ObjectNode) json.readTree(r.toJson());
    n.set("cold", json.valueToTree(cold));
    return ShuffleAppResult.fromJson(json.writeValueAsString(n));
  }
}
