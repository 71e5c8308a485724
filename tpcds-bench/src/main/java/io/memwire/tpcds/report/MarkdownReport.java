package io.memwire.tpcds.report;

import io.memwire.localcluster.SparkKeys;
import io.memwire.tpcds.data.TpcdsDataGenerator;
import io.memwire.tpcds.run.QueryStats;
import io.memwire.tpcds.run.RunResult;
import io.memwire.tpcds.run.ShuffleConfig;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Renders {@code report.md}: environment, configurations, a summary, one table per query, the
 * charts.
 */
final class MarkdownReport {
  private MarkdownReport() {}

  static String render(RunResult r, List<String> charts) {
    StringBuilder md = new StringBuilder();
    Map<String, Object> env = r.environment();
    md.append("# TPC-DS shuffle comparison\n\n");
    if (!r.verified()) {
      md.append("**RUN FAILED: ").append(r.failure()).append("**\n\n");
    } else {
      md.append("All answers verified equal to the reference configuration `")
          .append(r.reference())
          .append("` (order-insensitive, every row, decimals exact)")
          .append(
              r.failures().isEmpty()
                  ? ""
                  : "; "
                      + failedQueries(r).size()
                      + " of "
                      + r.queries().size()
                      + " queries failed to run (see below)")
          .append(".\n\n");
    }
    md.append("| | |\n|---|---|\n");
    row(md, "Spark", env.get("sparkVersion"));
    row(md, "cluster", env.get("master") + ", " + env.get("executors") + " executors");
    row(
        md,
        "scale factor",
        TpcdsDataGenerator.scaleText(r.dataSet().scale())
            + " (data "
            + (r.dataSet().generated() ? "generated" : "reused")
            + ": "
            + r.dataSet().path()
            + ")");
    row(
        md,
        "broadcast joins",
        Boolean.TRUE.equals(env.get("noBroadcast")) ? "off" : "on (Spark defaults)");
    row(
        md,
        "rounds",
        (Integer.valueOf(1).equals(env.getOrDefault("sessions", 1))
                ? ""
                : env.get("sessions") + " sessions (clusters started afresh for each) of ")
            + env.get("warmups")
            + " warm-up + "
            + env.get("iterations")
            + " timed, configuration order permuted each round");
    row(
        md,
        "host",
        env.get("host")
            + ", "
            + env.get("hostCores")
            + " cores, "
            + env.get("os")
            + ", Java "
            + env.get("java"));
    row(
        md,
        "run time",
        String.format(Locale.ROOT, "%.0f s", ((Number) env.get("durationSeconds")).doubleValue()));
    md.append(
        "\n## Configurations\n\n| name | shuffle manager | provider | settings |\n|---|---|---|---|\n");
    for (ShuffleConfig c : r.configs()) {
      md.append("| ")
          .append(c.name())
          .append(c.name().equals(r.reference()) ? " (reference)" : "")
          .append(" | `")
          .append(c.manager())
          .append("` | ")
          .append(c.provider())
          .append(" | ")
          .append(settings(c))
          .append(" |\n");
    }

    md.append(PathSection.render(r));
    md.append(BlockSizeSection.render(r));
    if (!r.failures().isEmpty()) {
      md.append(
          "\n## Queries that failed to run\n\nEach was left out of the rounds after its failure.\n\n"
              + "| query | configuration | round | error |\n|---|---|---:|---|\n");
      r.failures()
          .forEach(
              f ->
                  md.append("| ")
                      .append(f.query())
                      .append(" | ")
                      .append(f.config())
                      .append(" | ")
                      .append(f.round() + 1)
                      .append(" | ")
                      .append(cell(f.error()))
                      .append(" |\n"));
    }

    md.append("\n## Summary: median wall time (ms)\n\n| query |");
    for (ShuffleConfig c : r.configs()) {
      md.append(' ').append(c.name()).append(" |");
    }
    for (ShuffleConfig c : others(r)) {
      md.append(" speedup ").append(c.name()).append(" |");
    }
    md.append("\n|---|").append("---:|".repeat(r.configs().size() + others(r).size())).append('\n');
    for (String q : r.queries()) {
      md.append("| ").append(q).append(" |");
      for (ShuffleConfig c : r.configs()) {
        QueryStats s = r.stats(q, c.name());
        md.append(' ').append(s == null ? "-" : num(s.medianMs(), 0)).append(" |");
      }
      for (ShuffleConfig c : others(r)) {
        Double v = r.speedups().get(c.name()).get(q);
        md.append(' ').append(v == null ? "-" : num(v, 3) + "x").append(" |");
      }
      md.append('\n');
    }
    for (ShuffleConfig c : others(r)) {
      Double g = r.geomeanSpeedup().get(c.name());
      md.append("\nGeometric-mean speedup of `")
          .append(c.name())
          .append("` over `")
          .append(r.reference())
          .append("`: **")
          .append(g == null ? "-" : num(g, 3) + "x")
          .append("** (above 1 means faster).\n");
    }
    List<PairedSpeedup.Row> paired = PairedSpeedup.of(r);
    if (!paired.isEmpty()) {
      md.append(
          "\n## Paired rounds\n\nPer round, the reference's time over the configuration's in the same"
              + " round; geometric means over rounds (and over queries for `all`), with a 95% bootstrap"
              + " interval of the wall-time ratio (sessions resampled, then rounds within them). An"
              + " interval that holds 1 cannot tell the two apart; with one session it speaks for that"
              + " run's clusters only. Task time and task CPU: the query's tasks' summed run time and"
              + " CPU time, the same ratio (CPU near 1 while run time falls: the tasks waited or were"
              + " off their cores longer).\n\n"
              + "| configuration | query | rounds | wall speedup | 95% interval | task-time speedup"
              + " | task-CPU speedup |\n"
              + "|---|---|---:|---:|---:|---:|---:|\n");
      for (PairedSpeedup.Row p : paired) {
        md.append("| ")
            .append(p.config())
            .append(" | ")
            .append(p.query().equals("all") ? "**all**" : p.query())
            .append(" | ")
            .append(p.rounds())
            .append(" | ")
            .append(num(p.wall(), 3))
            .append("x | ")
            .append(num(p.low(), 3))
            .append(" to ")
            .append(num(p.high(), 3))
            .append(" | ")
            .append(num(p.taskTime(), 3))
            .append("x | ")
            .append(num(p.taskCpu(), 3))
            .append("x |\n");
      }
      List<PairedSpeedup.SessionRow> sessions = PairedSpeedup.perSession(r);
      if (sessions.stream().anyMatch(x -> x.session() > 0)) {
        md.append(
            "\nPer session (each on clusters started afresh), the set's paired wall speedup:"
                + " its spread is the cluster-to-cluster part of the noise.\n\n"
                + "| configuration | session | rounds | wall speedup |\n|---|---:|---:|---:|\n");
        for (PairedSpeedup.SessionRow x : sessions) {
          md.append("| ")
              .append(x.config())
              .append(" | ")
              .append(x.session() + 1)
              .append(" | ")
              .append(x.rounds())
              .append(" | ")
              .append(num(x.wall(), 3))
              .append("x |\n");
        }
      }
    }

    md.append(
        "\n## Per query\n\nTimes in ms over the timed runs; shuffle sizes in MB and fetch wait in ms are medians"
            + " summed over all tasks of the query.\n");
    for (String q : r.queries()) {
      md.append("\n### ")
          .append(q)
          .append("\n\n")
          .append(
              "| configuration | median | min | max | spread | shuffle written | read local | read remote"
                  + " | one-sided | not one-sided | fetch wait | records read |\n"
                  + "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      for (ShuffleConfig c : r.configs()) {
        QueryStats s = r.stats(q, c.name());
        if (s == null) {
          continue;
        }
        md.append("| ")
            .append(c.name())
            .append(" | ")
            .append(num(s.medianMs(), 0))
            .append(" | ")
            .append(num(s.minMs(), 0))
            .append(" | ")
            .append(num(s.maxMs(), 0))
            .append(" | ")
            .append(num(s.spreadPercent(), 0))
            .append("% | ")
            .append(num(s.bytesWritten() / 1e6, 1))
            .append(" | ")
            .append(num(s.localBytesRead() / 1e6, 1))
            .append(" | ")
            .append(num(s.remoteBytesRead() / 1e6, 1))
            .append(" | ")
            .append(mbOrDash(s.oneSidedBytes()))
            .append(" | ")
            .append(mbOrDash(s.notOneSidedBytes()))
            .append(" | ")
            .append(num(s.fetchWaitMs(), 0))
            .append(" | ")
            .append(num(s.recordsRead(), 0))
            .append(" |\n");
      }
    }
    if (!charts.isEmpty()) {
      md.append("\n## Charts\n\n");
      for (String chart : charts) {
        md.append("![").append(chart).append("](").append(chart).append(")\n\n");
      }
    }
    md.append(
        "\nFiles: `measurements.csv` (every execution), `summary.csv`, `results.json`, `answers/` (reference"
            + " answers), `logs/` (driver logs).\n");
    return md.toString();
  }

  private static List<String> failedQueries(RunResult r) {
    return r.failures().stream().map(f -> f.query()).distinct().toList();
  }

  private static String cell(String text) {
    String oneLine = text.replace('\n', ' ').replace("|", "\\|");
    return oneLine.length() > 300 ? oneLine.substring(0, 300) + "..." : oneLine;
  }

  private static String mbOrDash(double bytes) {
    return Double.isNaN(bytes) ? "-" : num(bytes / 1e6, 1);
  }

  private static List<ShuffleConfig> others(RunResult r) {
    return r.configs().subList(1, r.configs().size());
  }

  private static String settings(ShuffleConfig c) {
    StringBuilder sb = new StringBuilder();
    c.sparkConf()
        .forEach(
            (k, v) -> {
              if (!k.equals(SparkKeys.SHUFFLE_MANAGER)) {
                sb.append(sb.length() == 0 ? "" : ", ")
                    .append('`')
                    .append(k)
                    .append('=')
                    .append(v)
                    .append('`');
              }
            });
    return sb.length() == 0 ? "-" : sb.toString();
  }

  private static void row(StringBuilder md, String key, Object value) {
    md.append("| ").append(key).append(" | ").append(value).append(" |\n");
  }

  static String num(double v, int decimals) {
    return String.format(Locale.ROOT, "%,." + decimals + "f", v);
  }
}
