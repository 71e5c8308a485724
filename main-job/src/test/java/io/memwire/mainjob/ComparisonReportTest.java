package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
