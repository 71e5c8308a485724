package io.memwire.tpcds.report;

import io.memwire.tpcds.run.Measurement;
import io.memwire.tpcds.run.QueryStats;
import io.memwire.tpcds.run.RunResult;
import io.memwire.tpcds.run.ShuffleConfig;
import io.memwire.tpcds.worker.ShuffleMetrics;
import io.memwire.tpcds.worker.WorkerMessages;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes a run's results directory: {@code measurements.csv} (every execution), {@code summary.csv}
 * (per query and configuration), {@code failures.csv} (queries that failed to run, when any),
 * {@code block-sizes.csv} (the sizes of the blocks read one-sided), {@code results.json} (all of it
 * with configuration and environment), {@code report.md} and the charts under {@code charts/}.
 */
public final class ReportWriter {
  private final Path dir;

  /** A writer into {@code runDir}. */
  public ReportWriter(Path runDir) {
    this.dir = runDir;
  }

  /** Writes every file. */
  public void write(RunResult result) throws IOException {
    Files.createDirectories(dir);
    writeMeasurements(result);
    writeSummary(result);
    writePaired(result);
    writeFailures(result);
    BlockSizeSection.writeCsv(result, dir);
    WorkerMessages.JSON
        .writerWithDefaultPrettyPrinter()
        .writeValue(dir.resolve("results.json").toFile(), result);
    List<String> charts = new Charts(dir.resolve("charts")).write(result);
    Files.writeString(
        dir.resolve("report.md"), MarkdownReport.render(result, charts), StandardCharsets.UTF_8);
  }

  private void writeMeasurements(RunResult result) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add(
        "query,config,session,round,warmup,wall_ms,rows,tasks,executor_run_ms,shuffle_bytes_written,"
            + "shuffle_records_written,shuffle_local_bytes_read,shuffle_remote_bytes_read,fetch_wait_ms,"
            + "shuffle_records_read,local_blocks_fetched,remote_blocks_fetched,one_sided_bytes,not_one_sided_bytes,"
            + "fallback_blocks,outputs_not_registered,executor_cpu_ms,gc_ms,read_task_run_ms,publish_ms");
    for (Measurement m : result.measurements()) {
      ShuffleMetrics s = m.metrics();
      lines.add(
          String.join(
              ",",
              m.query(),
              m.config(),
              String.valueOf(m.session()),
              String.valueOf(m.round()),
              String.valueOf(m.warmup()),
              fmt(m.wallMs()),
              String.valueOf(m.rows()),
              String.valueOf(s.tasks()),
              String.valueOf(s.executorRunMs()),
              String.valueOf(s.bytesWritten()),
              String.valueOf(s.recordsWritten()),
              String.valueOf(s.localBytesRead()),
              String.valueOf(s.remoteBytesRead()),
              String.valueOf(s.fetchWaitMs()),
              String.valueOf(s.recordsRead()),
              String.valueOf(s.localBlocksFetched()),
              String.valueOf(s.remoteBlocksFetched()),
              m.path() == null ? "" : String.valueOf(m.path().oneSidedBytes()),
              m.path() == null
                  ? ""
                  : String.valueOf(m.path().notOneSidedBytes(s.remoteBytesRead())),
              m.path() == null ? "" : String.valueOf(m.path().fallbackBlocks()),
              m.path() == null ? "" : String.valueOf(m.path().fallbackOutputs()),
              String.valueOf(s.executorCpuMs()),
              String.valueOf(s.gcMs()),
              String.valueOf(s.readTaskRunMs()),
              m.path() == null ? "" : fmt(m.path().publishMicros() / 1000.0)));
    }
    Files.write(dir.resolve("measurements.csv"), lines, StandardCharsets.UTF_8);
  }

  private void writeSummary(RunResult result) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add(
        "query,config,manager,provider,runs,median_ms,min_ms,max_ms,spread_pct,speedup_vs_"
            + result.reference()
            + ",shuffle_bytes_written,shuffle_local_bytes_read,shuffle_remote_bytes_read,fetch_wait_ms,shuffle_records_read"
            + ",one_sided_bytes,not_one_sided_bytes");
    for (QueryStats s : result.stats()) {
      ShuffleConfig config =
          result.configs().stream()
              .filter(c -> c.name().equals(s.config()))
              .findFirst()
              .orElseThrow();
      lines.add(
          String.join(
              ",",
              s.query(),
              s.config(),
              config.manager(),
              config.provider(),
              String.valueOf(s.runs()),
              fmt(s.medianMs()),
              fmt(s.minMs()),
              fmt(s.maxMs()),
              fmt(s.spreadPercent()),
              fmt(speedup(result, s)),
              fmt(s.bytesWritten()),
              fmt(s.localBytesRead()),
              fmt(s.remoteBytesRead()),
              fmt(s.fetchWaitMs()),
              fmt(s.recordsRead()),
              fmt(s.oneSidedBytes()),
              fmt(s.notOneSidedBytes())));
    }
    Files.write(dir.resolve("summary.csv"), lines, StandardCharsets.UTF_8);
  }

  private void writePaired(RunResult result) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add(
        "config,query,rounds,paired_speedup,ci95_low,ci95_high,task_time_speedup,task_cpu_speedup");
    for (PairedSpeedup.Row row : PairedSpeedup.of(result)) {
      lines.add(
          String.join(
              ",",
              row.config(),
              row.query(),
              String.valueOf(row.rounds()),
              fmt(row.wall()),
              fmt(row.low()),
              fmt(row.high()),
              fmt(row.taskTime()),
              fmt(row.taskCpu())));
    }
    Files.write(dir.resolve("paired.csv"), lines, StandardCharsets.UTF_8);
    List<String> sessions = new ArrayList<>();
    sessions.add("config,session,rounds,paired_speedup");
    for (PairedSpeedup.SessionRow row : PairedSpeedup.perSession(result)) {
      sessions.add(
          String.join(
              ",",
              row.config(),
              String.valueOf(row.session()),
              String.valueOf(row.rounds()),
              fmt(row.wall())));
    }
    Files.write(dir.resolve("paired-sessions.csv"), sessions, StandardCharsets.UTF_8);
  }

  private void writeFailures(RunResult result) throws IOException {
    if (result.failures().isEmpty()) {
      return;
    }
    List<String> lines = new ArrayList<>();
    lines.add("query,config,round,error");
    result
        .failures()
        .forEach(
            f ->
                lines.add(
                    String.join(
                        ",",
                        f.query(),
                        f.config(),
                        String.valueOf(f.round()),
                        '"' + f.error().replace("\"", "\"\"").replace('\n', ' ') + '"')));
    Files.write(dir.resolve("failures.csv"), lines, StandardCharsets.UTF_8);
  }

  /**
   * Reference median over this configuration's median for the query (1 for the reference itself).
   */
  static double speedup(RunResult result, QueryStats s) {
    if (s.config().equals(result.reference())) {
      return 1.0;
    }
    Map<String, Double> perQuery = result.speedups().get(s.config());
    Double v = perQuery == null ? null : perQuery.get(s.query());
    return v == null ? Double.NaN : v;
  }

  static String fmt(double v) {
    return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.3f", v);
  }
}
