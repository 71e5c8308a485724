package io.memwire.tpcds.run;

import io.memwire.tpcds.worker.PathCounters;
import io.memwire.tpcds.worker.QueryRun;
import io.memwire.tpcds.worker.WorkerMessages.Request;
import io.memwire.tpcds.worker.WorkerProcess;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * The measured part of a run: per session, rounds (warm-ups, then timed ones) of every query on
 * every configuration, in the order {@link RoundOrder} gives each round; each run is recorded as a
 * {@link Measurement}, its path checked ({@link PathCheck}) and its answer checked against the
 * reference's, across sessions ({@link ReferenceAnswers}). A query that fails to run is recorded
 * and left out of later rounds and sessions.
 */
final class QueryRounds {
  private final RunOptions options;
  private final Map<String, ShuffleConfig> configs;
  private final Consumer<String> progress;
  private final ReferenceAnswers answers;
  private final List<String> queries;
  private final Map<String, String> sql;
  private final Set<String> failed = new HashSet<>();

  /**
   * @param configs the configurations by name
   * @param reference the reference configuration's name
   * @param queries the queries, in running order
   * @param sql each query's text
   * @param progress where progress lines go
   */
  QueryRounds(
      RunOptions options,
      Map<String, ShuffleConfig> configs,
      String reference,
      List<String> queries,
      Map<String, String> sql,
      Path runDir,
      Consumer<String> progress) {
    this.options = options;
    this.configs = configs;
    this.queries = queries;
    this.sql = sql;
    this.progress = progress;
    this.answers = new ReferenceAnswers(reference, runDir);
  }

  /**
   * Runs session {@code session}'s rounds on {@code workers} (started for it; the first is the
   * reference configuration), adding to {@code measurements} and {@code failures}.
   */
  void runSession(
      int session,
      List<WorkerProcess> workers,
      List<Measurement> measurements,
      List<QueryFailure> failures)
      throws IOException, TimeoutException {
    int rounds = options.warmups() + options.iterations();
    String sessionName =
        options.sessions() > 1 ? "s" + (session + 1) + "/" + options.sessions() + " " : "";
    for (int local = 0; local < rounds; local++) {
      int round = session * rounds + local;
      boolean warmup = local < options.warmups();
      String roundName =
          sessionName
              + (warmup
                  ? "warm-up " + (local + 1) + "/" + options.warmups()
                  : "timed " + (local - options.warmups() + 1) + "/" + options.iterations());
      int[] order =
          RoundOrder.of(
              workers.size(),
              warmup ? -1 : session * options.iterations() + local - options.warmups());
      for (int qi = 0; qi < queries.size(); qi++) {
        String query = queries.get(qi);
        if (failed.contains(query)) {
          continue;
        }
        for (int k = 0; k < workers.size(); k++) {
          WorkerProcess worker = workers.get(order[k]);
          QueryRun run;
          try {
            run = worker.call(Request.run(query, sql.get(query)), options.queryTimeout()).run();
          } catch (WorkerProcess.WorkerException e) {
            if (!worker.isAlive()) {
              throw e;
            }
            // The query could not run (the worker and its cluster are fine): record it, go on.
            failed.add(query);
            failures.add(new QueryFailure(query, worker.name(), round, e.getMessage()));
            say(
                String.format(
                    "%-20s %-5s (%d/%d) %-12s FAILED: %s",
                    roundName, query, qi + 1, queries.size(), worker.name(), e.getMessage()));
            continue;
          }
          ShuffleConfig config = configs.get(worker.name());
          measurements.add(
              new Measurement(
                  query,
                  worker.name(),
                  session,
                  round,
                  warmup,
                  run.wallMs(),
                  run.answer().rows().size(),
                  run.metrics(),
                  run.path()));
          say(
              String.format(
                  "%-20s %-5s (%d/%d) %-12s %8.0f ms  shuffle write %s, read %s (remote %s%s), fetch wait %d ms",
                  roundName,
                  query,
                  qi + 1,
                  queries.size(),
                  worker.name(),
                  run.wallMs(),
                  mb(run.metrics().bytesWritten()),
                  mb(run.metrics().bytesRead()),
                  mb(run.metrics().remoteBytesRead()),
                  pathText(run),
                  run.metrics().fetchWaitMs()));
          PathCheck.check(query, config, run);
          if (!failed.contains(query)) {
            answers.verify(query, worker.name(), run.answer());
          }
        }
      }
    }
  }

  private static String pathText(QueryRun run) {
    PathCounters p = run.path();
    if (p == null) {
      return "";
    }
    return ", one-sided "
        + mb(p.oneSidedBytes())
        + ", not one-sided "
        + mb(p.notOneSidedBytes(run.metrics().remoteBytesRead()))
        + ", fallback blocks "
        + p.fallbackBlocks()
        + String.format(", publish %.1f ms", p.publishMicros() / 1000.0);
  }

  static String mb(long bytes) {
    return String.format("%.1f MB", bytes / 1e6);
  }

  private void say(String line) {
    progress.accept(line);
  }
}
