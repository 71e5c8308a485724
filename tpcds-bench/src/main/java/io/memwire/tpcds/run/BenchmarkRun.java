package io.memwire.tpcds.run;

import io.memwire.tpcds.data.DataSetInfo;
import io.memwire.tpcds.data.TpcdsDataGenerator;
import io.memwire.tpcds.query.QueryCatalog;
import io.memwire.tpcds.report.ReportWriter;
import io.memwire.tpcds.verify.Answer;
import io.memwire.tpcds.verify.AnswerComparator;
import io.memwire.tpcds.verify.AnswerMismatchException;
import io.memwire.tpcds.verify.PathCheckException;
import io.memwire.tpcds.worker.ClusterInfo;
import io.memwire.tpcds.worker.PathCounters;
import io.memwire.tpcds.worker.QueryRun;
import io.memwire.tpcds.worker.WorkerMessages;
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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One benchmark run: a driver process per configuration (each with its own cluster, all alive at
 * once), data generated or reused, then rounds of every query on every configuration with the
 * configuration order rotating each round, every answer checked against the reference
 * configuration's, and the results written by {@link ReportWriter}.
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
    List<Measurement> measurements = new ArrayList<>();
    List<QueryFailure> failures = new ArrayList<>();
    DataSetInfo dataSet = null;
    String failure = null;
    RunResult result = null;
    try {
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
                spec(config, runDir),
                classPath,
                options.driverMemoryMb(),
                runDir.resolve("logs").resolve(config.name() + ".log"),
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
      dataSet =
          workers
              .get(0)
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
      for (WorkerProcess worker : workers) {
        worker.call(Request.load(dataSet.path()), options.queryTimeout());
      }
      runRounds(queries, sql, workers, measurements, failures, runDir);
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
      for (WorkerProcess worker : workers) {
        worker.close();
      }
      if (dataSet != null) {
        result =
            result(runDir, configs, queries, dataSet, workers, measurements, failures, failure);
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

  private void runRounds(
      List<String> queries,
      Map<String, String> sql,
      List<WorkerProcess> workers,
      List<Measurement> measurements,
      List<QueryFailure> failures,
      Path runDir)
      throws IOException, TimeoutException {
    int rounds = options.warmups() + options.iterations();
    Map<String, Answer> reference = new HashMap<>();
    String referenceConfig = workers.get(0).name();
    Set<String> failed = new HashSet<>();
    for (int round = 0; round < rounds; round++) {
      boolean warmup = round < options.warmups();
      String roundName =
          warmup
              ? "warm-up " + (round + 1) + "/" + options.warmups()
              : "timed " + (round - options.warmups() + 1) + "/" + options.iterations();
      for (int qi = 0; qi < queries.size(); qi++) {
        String query = queries.get(qi);
        if (failed.contains(query)) {
          continue;
        }
        for (int k = 0; k < workers.size(); k++) {
          // Rotate the order each round so drift and warm caches do not favour one configuration.
          WorkerProcess worker = workers.get((k + round) % workers.size());
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
                    "%-14s %-5s (%d/%d) %-12s FAILED: %s",
                    roundName, query, qi + 1, queries.size(), worker.name(), e.getMessage()));
            continue;
          }
          ShuffleConfig config = configs.get(worker.name());
          measurements.add(
              new Measurement(
                  query,
                  worker.name(),
                  round,
                  warmup,
                  run.wallMs(),
                  run.answer().rows().size(),
                  run.metrics(),
                  run.path()));
          say(
              String.format(
                  "%-14s %-5s (%d/%d) %-12s %8.0f ms  shuffle write %s, read %s (remote %s%s), fetch wait %d ms",
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
          checkPath(query, config, run);
          if (!failed.contains(query)) {
            verify(query, worker.name(), referenceConfig, run.answer(), reference, runDir);
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
        + p.fallbackBlocks();
  }

  /**
   * A Memwire configuration must have moved every remote byte one-sided; otherwise its timings
   * measure something else and the run stops.
   */
  static void checkPath(String query, ShuffleConfig config, QueryRun run) {
    if (config == null || !config.manager().equals(ShuffleConfig.RDMA_MANAGER)) {
      return;
    }
    long remote = run.metrics().remoteBytesRead();
    PathCounters p = run.path();
    String problem = null;
    if (p == null) {
      problem =
          "its executors report no Memwire counters (is "
              + ShuffleConfig.RDMA_MANAGER
              + " running there?)";
    } else if (p.notOneSidedBytes(remote) > 0 || p.fallbackBlocks() > 0 || p.failedBlocks() > 0) {
      problem =
          String.format(
              "Spark read %,d remote bytes, Memwire %,d of them one-sided (%,d not);"
                  + " %d blocks went to Spark's own transfer, %d failed, %d map outputs were not registered",
              remote,
              p.oneSidedBytes(),
              p.notOneSidedBytes(remote),
              p.fallbackBlocks(),
              p.failedBlocks(),
              p.fallbackOutputs());
    }
    if (problem != null && (remote > 0 || p == null)) {
      String message =
          "PATH CHECK FAILED in "
              + query
              + ": configuration '"
              + config.name()
              + "' did not move its remote shuffle bytes one-sided: "
              + problem;
      LOG.error(message);
      throw new PathCheckException(message);
    }
  }

  private void verify(
      String query,
      String config,
      String referenceConfig,
      Answer answer,
      Map<String, Answer> reference,
      Path runDir)
      throws IOException {
    Answer expected = reference.get(query);
    if (expected == null) {
      // Round 0 runs the reference configuration first, so its answer is the first one seen.
      if (!config.equals(referenceConfig)) {
        throw new IllegalStateException("reference configuration did not run " + query + " first");
      }
      reference.put(query, answer);
      Path file = runDir.resolve("answers").resolve(query + ".json");
      Files.createDirectories(file.getParent());
      WorkerMessages.JSON.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), answer);
      return;
    }
    Optional<String> difference = AnswerComparator.difference(expected, answer);
    if (difference.isPresent()) {
      String message =
          "ANSWER MISMATCH in "
              + query
              + ": configuration '"
              + config
              + "' differs from reference '"
              + referenceConfig
              + "': "
              + difference.get();
      LOG.error(message);
      throw new AnswerMismatchException(message);
    }
  }

  private RunResult result(
      Path runDir,
      List<ShuffleConfig> configs,
      List<String> queries,
      DataSetInfo dataSet,
      List<WorkerProcess> workers,
      List<Measurement> measurements,
      List<QueryFailure> failures,
      String failure) {
    List<QueryStats> stats = new ArrayList<>();
    for (String q : queries) {
      for (ShuffleConfig c : configs) {
        List<Measurement> timed =
            measurements.stream()
                .filter(m -> !m.warmup() && m.query().equals(q) && m.config().equals(c.name()))
                .toList();
        if (!timed.isEmpty()) {
          stats.add(QueryStats.of(q, c.name(), timed));
        }
      }
    }
    String ref = configs.get(0).name();
    Map<String, Map<String, Double>> speedups = new LinkedHashMap<>();
    Map<String, Double> geomean = new LinkedHashMap<>();
    for (ShuffleConfig c : configs.subList(1, configs.size())) {
      Map<String, Double> perQuery = new LinkedHashMap<>();
      for (String q : queries) {
        QueryStats base =
            stats.stream()
                .filter(s -> s.query().equals(q) && s.config().equals(ref))
                .findFirst()
                .orElse(null);
        QueryStats other =
            stats.stream()
                .filter(s -> s.query().equals(q) && s.config().equals(c.name()))
                .findFirst()
                .orElse(null);
        if (base != null && other != null && other.medianMs() > 0) {
          perQuery.put(q, base.medianMs() / other.medianMs());
        }
      }
      speedups.put(c.name(), perQuery);
      if (!perQuery.isEmpty()) {
        geomean.put(
            c.name(),
            QueryStats.geometricMean(
                perQuery.values().stream().mapToDouble(Double::doubleValue).toArray()));
      }
    }
    Map<String, Object> env = new LinkedHashMap<>();
    env.put("timestamp", LocalDateTime.now(ZoneOffset.UTC) + "Z");
    env.put("host", hostName());
    env.put("hostCores", Runtime.getRuntime().availableProcessors());
    env.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
    env.put("java", System.getProperty("java.version"));
    env.put("sparkVersion", workers.isEmpty() ? "?" : workers.get(0).info().sparkVersion());
    env.put("master", options.localCluster() ? clusterDescription() : options.master());
    env.put("executors", workers.isEmpty() ? 0 : workers.get(0).info().executors());
    env.put("scale", options.scale());
    env.put("noBroadcast", options.noBroadcast());
    env.put("warmups", options.warmups());
    env.put("iterations", options.iterations());
    env.put("durationSeconds", (System.nanoTime() - startNanos) / 1e9);
    List<ClusterInfo> clusters = workers.stream().map(WorkerProcess::info).toList();
    return new RunResult(
        runDir.toString(),
        env,
        clusters,
        configs,
        queries,
        dataSet,
        List.copyOf(measurements),
        stats,
        speedups,
        geomean,
        failure == null,
        failure,
        List.copyOf(failures));
  }

  private WorkerSpec spec(ShuffleConfig config, Path runDir) {
    return new WorkerSpec(
        config.name(),
        config.sparkConf(),
        options.master(),
        options.executors(),
        options.executorCores(),
        options.executorMemoryMb(),
        runDir.resolve("cluster").resolve(config.name()).toString());
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

  static String mb(long bytes) {
    return String.format("%.1f MB", bytes / 1e6);
  }

  private static String hostName() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "?";
    }
  }
}
