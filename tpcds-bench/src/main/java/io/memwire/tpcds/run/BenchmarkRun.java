package io.memwire.tpcds.run;

import io.memwire.tpcds.data.DataSetInfo;
import io.memwire.tpcds.data.TpcdsDataGenerator;
import io.memwire.tpcds.query.QueryCatalog;
import io.memwire.tpcds.report.ReportWriter;
import io.memwire.tpcds.verify.AnswerMismatchException;
import io.memwire.tpcds.verify.PathCheckException;
import io.memwire.tpcds.worker.ClusterInfo;
import io.memwire.tpcds.worker.WorkerMessages.Request;
import io.memwire.tpcds.worker.WorkerProcess;
import io.memwire.tpcds.worker.WorkerSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One benchmark run: a driver process per configuration (each with its own cluster, all alive at
 * once), data generated or reused, then rounds of every query on every configuration with the
 * configuration order changing each round ({@link RoundOrder}), every answer checked against the
 * reference configuration's, and the results written by {@link ReportWriter}. With {@code
 * --sessions} above 1 the clusters are stopped and started afresh that many times, each session
 * running its own warm-up and timed rounds: rounds on one cluster share what that JVM's
 * compilations made of it, so only fresh clusters sample that part of the noise.
 *
 * <p>Why one process per configuration: Spark reads {@code spark.shuffle.manager} when it creates a
 * SparkContext, and a JVM holds one SparkContext. Keeping the clusters alive side by side (about
 * 1.1 GB each with two executors) lets rounds interleave configurations without a restart between
 * them; only one runs a query at any time, so they do not compete for cores.
 */
public final class BenchmarkRun {
  private static final Logger LOG = LoggerFactory.getLogger(BenchmarkRun.class);
  private static final Duration START_TIMEOUT = Duration.ofMinutes(5);

  private final RunOptions options;
  private final Consumer<String> progress;
  private final QueryCatalog catalog = new QueryCatalog();
  private final Map<String, ShuffleConfig> configs = new HashMap<>();
  private final String classPath;
  private long startNanos;

  /**
   * A run with {@code options} that reports progress lines to {@code progress}.
   *
   * @param classPath class path of the driver processes (and of local-cluster executors)
   */
  public BenchmarkRun(RunOptions options, Consumer<String> progress, String classPath) {
    this.options = options;
    this.progress = progress;
    this.classPath = classPath;
  }

  /** A run using this JVM's class path. */
  public BenchmarkRun(RunOptions options, Consumer<String> progress) {
    this(options, progress, WorkerProcess.currentClassPath());
  }

  /**
   * Runs the benchmark and writes its results directory.
   *
   * <p>A query that fails to run is recorded ({@link RunResult#failures()}) and left out of later
   * rounds; the run goes on.
   *
   * @throws AnswerMismatchException when a configuration's answer differs from the reference's
   *     (results measured so far and {@code mismatch.txt} are written first)
   * @throws PathCheckException when a Memwire configuration's remote bytes did not all go one-sided
   *     ({@code path-check.txt} and the partial results are written first)
   */
  public RunResult run() throws IOException, TimeoutException {
    startNanos = System.nanoTime();
    List<String> queries = catalog.select(options.queries());
    Map<String, String> sql = new LinkedHashMap<>();
    for (String q : queries) {
      sql.put(q, catalog.sql(q));
    }
    List<ShuffleConfig> configs = options.effectiveConfigs();
    configs.forEach(c -> this.configs.put(c.name(), c));
    Path runDir = createRunDir();
    say("results go to " + runDir);
    say(
        "queries "
            + queries
            + ", configurations "
            + configs.stream().map(ShuffleConfig::name).toList()
            + (options.noBroadcast() ? ", broadcast joins off" : ""));

    List<WorkerProcess> workers = new ArrayList<>();
    List<ClusterInfo> clusters = new ArrayList<>();
    List<Measurement> measurements = new ArrayList<>();
    List<QueryFailure> failures = new ArrayList<>();
    DataSetInfo dataSet = null;
    String failure = null;
    RunResult result = null;
    try {
      QueryRounds rounds =
          new QueryRounds(
              options, this.configs, configs.get(0).name(), queries, sql, runDir, this::say);
      for (int session = 0; session < options.sessions(); session++) {
        if (options.sessions() > 1) {
          say("session " + (session + 1) + "/" + options.sessions() + ": clusters started afresh");
        }
        startWorkers(configs, runDir, session, workers);
        if (session == 0) {
          workers.forEach(w -> clusters.add(w.info()));
          dataSet = generate(workers.get(0));
        }
        for (WorkerProcess worker : workers) {
          worker.call(Request.load(dataSet.path()), options.queryTimeout());
        }
        rounds.runSession(session, workers, measurements, failures);
        closeAll(workers);
      }
    } catch (AnswerMismatchException | PathCheckException e) {
      failure = e.getMessage();
      Files.writeString(
          runDir.resolve(e instanceof AnswerMismatchException ? "mismatch.txt" : "path-check.txt"),
          e.getMessage() + System.lineSeparator());
      throw e;
    } catch (IOException | TimeoutException | RuntimeException e) {
      failure = String.valueOf(e);
      throw e;
    } finally {
      closeAll(workers);
      if (dataSet != null) {
        result =
            new RunSummary(options, clusterDescription(), startNanos)
                .result(
                    runDir, configs, queries, dataSet, clusters, measurements, failures, failure);
        try {
          new ReportWriter(runDir).write(result);
          say("wrote " + runDir.resolve("report.md"));
        } catch (IOException | RuntimeException writeError) {
          if (failure == null) {
            throw writeError;
          }
          // Keep the original failure visible; the partial report is a bonus.
          LOG.warn("Could not write the report of the failed run", writeError);
        }
      }
    }
    return result;
  }

  /** Starts one worker (and its cluster) per configuration into {@code workers}, in order. */
  private void startWorkers(
      List<ShuffleConfig> configs, Path runDir, int session, List<WorkerProcess> workers)
      throws IOException, TimeoutException {
    String suffix = options.sessions() > 1 ? "-s" + (session + 1) : "";
    for (ShuffleConfig config : configs) {
      say(
          "starting "
              + clusterDescription()
              + " for "
              + config.name()
              + " ("
              + config.manager()
              + (config.provider().equals("-") ? "" : ", provider " + config.provider())
              + ")");
      WorkerProcess worker =
          WorkerProcess.start(
              spec(config, runDir, suffix),
              classPath,
              options.driverMemoryMb(),
              runDir.resolve("logs").resolve(config.name() + suffix + ".log"),
              START_TIMEOUT,
              line -> say("  " + config.name() + ": " + line));
      workers.add(worker);
      ClusterInfo info = worker.info();
      say(
          String.format(
              "  %s: Spark %s, %s, %d executors, up in %.1f s",
              config.name(),
              info.sparkVersion(),
              info.master(),
              info.executors(),
              info.startSeconds()));
    }
  }

  private DataSetInfo generate(WorkerProcess worker) throws IOException, TimeoutException {
    DataSetInfo dataSet =
        worker
            .call(
                Request.generate(
                    options.scale(), options.dataDir().toString(), options.costPerChunk()),
                options.queryTimeout().multipliedBy(10))
            .dataSet();
    say(
        String.format(
            "%s TPC-DS data at scale %s in %s (%.1f s, store_sales %,d rows)",
            dataSet.generated() ? "generated" : "reused",
            TpcdsDataGenerator.scaleText(dataSet.scale()),
            dataSet.path(),
            dataSet.seconds(),
            dataSet.rowCounts().getOrDefault("store_sales", 0L)));
    return dataSet;
  }

  /** Stops every worker and its cluster and empties the list. */
  private static void closeAll(List<WorkerProcess> workers) {
    for (WorkerProcess worker : workers) {
      worker.close();
    }
    workers.clear();
  }

  private WorkerSpec spec(ShuffleConfig config, Path runDir, String suffix) {
    return new WorkerSpec(
        config.name(),
        config.sparkConf(),
        options.master(),
        options.executors(),
        options.executorCores(),
        options.executorMemoryMb(),
        runDir.resolve("cluster").resolve(config.name() + suffix).toString());
  }

  private String clusterDescription() {
    return options.localCluster()
        ? String.format(
            "local-cluster[%d,%d,%d]",
            options.executors(), options.executorCores(), options.executorMemoryMb())
        : options.master();
  }

  private Path createRunDir() throws IOException {
    String stamp =
        LocalDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    Path dir = options.outDir().toAbsolutePath().resolve("run-" + stamp);
    for (int i = 2; Files.exists(dir); i++) {
      dir = options.outDir().toAbsolutePath().resolve("run-" + stamp + "-" + i);
    }
    return Files.createDirectories(dir);
  }

  private void say(String line) {
    progress.accept(String.format("[%5.0fs] %s", (System.nanoTime() - startNanos) / 1e9, line));
  }
}
