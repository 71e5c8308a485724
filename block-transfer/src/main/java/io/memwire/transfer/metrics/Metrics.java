package io.memwire.transfer.metrics;

import java.util.List;

/** What every group of {@link Metric}s shares: its documentation table. */
public final class Metrics {
  private Metrics() {}

  /** A Markdown table of {@code metrics}: name in backquotes, kind, unit, meaning. */
  public static String markdownTable(List<Metric> metrics) {
    StringBuilder sb = new StringBuilder("| metric | kind | unit | meaning |\n");
    sb.append("| --- | --- | --- | --- |\n");
    for (Metric m : metrics) {
      sb.append("| `")
          .append(m.name())
          .append("` | ")
          .append(m.kind().text())
          .append(" | ")
          .append(m.unit().text())
          .append(" | ")
          .append(m.doc())
          .append(" |\n");
    }
    return sb.toString();
  }
}
