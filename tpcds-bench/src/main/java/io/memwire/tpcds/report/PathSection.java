package io.memwire.tpcds.report;

import io.memwire.tpcds.run.Measurement;
import io.memwire.tpcds.run.RunResult;
import io.memwire.tpcds.run.ShuffleConfig;
import io.memwire.tpcds.worker.PathCounters;
import java.util.List;

/**
 * The report's proof of which path moved the bytes: per configuration, over every execution
 * (warm-ups included), Spark's remote shuffle bytes and, from the shuffle manager's own counters,
 * the bytes Memwire read one-sided and those that did not go that way.
 */
final class PathSection {
  private PathSection() {}

  static String render(RunResult r) {
    StringBuilder md =
        new StringBuilder(
            "\n## Which path moved the bytes\n\n"
                + "Every execution, warm-ups included. Remote: Spark's task metrics. One-sided: bytes Memwire's"
                + " manager delivered by one-sided reads, summed over the executors' counters. Not one-sided:"
                + " remote bytes less one-sided bytes. A Memwire configuration with remote bytes not one-sided"
                + " stops the run.\n\n"
                + "| configuration | executions | remote MB | one-sided MB | not one-sided MB | fallback blocks"
                + " | outputs not registered |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (ShuffleConfig c : r.configs()) {
      List<Measurement> runs =
          r.measurements().stream().filter(m -> m.config().equals(c.name())).toList();
      long remote = runs.stream().mapToLong(m -> m.metrics().remoteBytesRead()).sum();
      PathCounters sum =
          runs.isEmpty() || runs.stream().anyMatch(m -> m.path() == null)
              ? null
              : runs.stream().map(Measurement::path).reduce(PathCounters::plus).orElseThrow();
      md.append("| ")
          .append(c.name())
          .append(" | ")
          .append(runs.size())
          .append(" | ")
          .append(MarkdownReport.num(remote / 1e6, 1))
          .append(" | ");
      if (sum == null) {
        md.append("- | - | - | - |\n");
      } else {
        long notOneSided =
            runs.stream()
                .mapToLong(m -> m.path().notOneSidedBytes(m.metrics().remoteBytesRead()))
                .sum();
        md.append(MarkdownReport.num(sum.oneSidedBytes() / 1e6, 1))
            .append(" | ")
            .append(MarkdownReport.num(notOneSided / 1e6, 1))
            .append(" | ")
            .append(sum.fallbackBlocks())
            .append(" | ")
            .append(sum.fallbackOutputs())
            .append(" |\n");
      }
    }
    return md.toString();
  }
}
