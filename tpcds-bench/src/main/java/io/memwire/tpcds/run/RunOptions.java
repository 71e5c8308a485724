package io.memwire.tpcds.run;

import io.memwire.localcluster.SparkKeys;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Everything a benchmark run needs, with the command line's defaults. Parse with {@link #parse}.
 *
 * @param master Spark master URL, or null for a local multi-process cluster per configuration
 * @param executors executors per local cluster
 * @param executorCores cores per executor of a local cluster
 * @param executorMemoryMb memory per executor of a local cluster, MiB
 * @param driverMemoryMb heap of each driver (worker) JVM, MiB
 * @param scale TPC-DS scale factor
 * @param queries query selection: names and sets, comma-separated
 * @param warmups untimed rounds before the timed ones, in every session
 * @param iterations timed rounds of every session
 * @param sessions sessions: each starts every configuration's cluster afresh, runs the warm-up and
 *     the timed rounds, and stops the clusters, so the per-cluster part of the noise (what a JVM's
 *     compilations and placement make of a run) is sampled more than once
 * @param configs shuffle configurations; the first is the reference
 * @param noBroadcast turn broadcast joins off (both thresholds -1)
 * @param sparkConf settings applied to every configuration
 * @param dataDir cache of generated data, by scale factor
 * @param outDir parent of the per-run results directory
 * @param queryTimeout deadline for one query (and for data generation, times ten)
 * @param costPerChunk generator rows per generation task
 */
public record RunOptions(
    String master,
    int executors,
    int executorCores,
    int executorMemoryMb,
    int driverMemoryMb,
    double scale,
    String queries,
    int warmups,
    int iterations,
    int sessions,
    List<ShuffleConfig> configs,
    boolean noBroadcast,
    Map<String, String> sparkConf,
    Path dataDir,
    Path outDir,
    Duration queryTimeout,
    long costPerChunk) {

  /** Settings that turn broadcast joins off, in the planner and in adaptive execution. */
  public static final Map<String, String> NO_BROADCAST =
      Map.of(
          SparkKeys.SQL_AUTO_BROADCAST_JOIN_THRESHOLD, "-1",
          SparkKeys.SQL_ADAPTIVE_AUTO_BROADCAST_JOIN_THRESHOLD, "-1");

  /** Validates ranges. */
  public RunOptions {
    positive("--executors", executors);
    positive("--executor-cores", executorCores);
    positive("--iterations", iterations);
    positive("--sessions", sessions);
    if (warmups < 0) {
      throw new IllegalArgumentException("--warmup must be >= 0, got " + warmups);
    }
    if (!(scale > 0)) {
      throw new IllegalArgumentException("--scale must be positive, got " + scale);
    }
    if (configs.isEmpty()) {
      throw new IllegalArgumentException("--configs names no configuration");
    }
    if (configs.size() > RoundOrder.MAX_CONFIGS) {
      throw new IllegalArgumentException(
          "--configs names "
              + configs.size()
              + " configurations, at most "
              + RoundOrder.MAX_CONFIGS
              + " run side by side");
    }
    configs = List.copyOf(configs);
    sparkConf = Map.copyOf(sparkConf);
  }

  private static void positive(String option, long value) {
    if (value < 1) {
      throw new IllegalArgumentException(option + " must be >= 1, got " + value);
    }
  }

  /**
   * The configurations with the run-wide settings ({@code --conf}, {@code --no-broadcast}) applied.
   */
  public List<ShuffleConfig> effectiveConfigs() {
    Map<String, String> extra = new LinkedHashMap<>(sparkConf);
    if (noBroadcast) {
      extra.putAll(NO_BROADCAST);
    }
    return configs.stream().map(c -> c.with(extra)).toList();
  }

  /** Whether clusters are local multi-process clusters started by the runner. */
  public boolean localCluster() {
    return master == null;
  }

  /** The command-line help. */
  public static String usage() {
    return """
                Usage: TpcdsRunner [options]
                Runs TPC-DS queries once per shuffle configuration, verifies that all configurations return
                the same answers, and writes CSV, JSON, a Markdown report and PNG charts.

                  --master URL          Spark master (default: a local multi-process cluster per configuration)
                  --executors N         executors of the local cluster (default 2)
                  --executor-cores N    cores per executor (default 1)
                  --executor-memory MB  memory per executor in MiB (default 1024)
                  --driver-memory MB    heap of each driver JVM in MiB (default 1024)
                  --scale SF            TPC-DS scale factor (default 1)
                  --queries LIST        query names and sets, comma-separated (default: default)
                                        sets: default = q3,q7,q19,q42,q50,q55,q93; smoke = q3,q93; all = 103 files
                  --iterations N        timed rounds per session (default 3)
                  --warmup N            untimed rounds first, in every session (default 1)
                  --sessions N          start every configuration's cluster afresh N times, each session
                                        running the warm-up and timed rounds (default 1)
                  --configs LIST        shuffle configurations, comma-separated; the first is the reference
                                        (default: sort,rdma-tcp). Built-in: sort, rdma-tcp, rdma-verbs;
                                        inline: name{manager=<class>;spark.key=value;...}
                  --conf KEY=VALUE      Spark setting for every configuration (repeatable)
                  --no-broadcast        turn broadcast joins off (spark.sql.autoBroadcastJoinThreshold=-1 and
                                        spark.sql.adaptive.autoBroadcastJoinThreshold=-1)
                  --data-dir DIR        cache of generated data, one directory per scale factor
                                        (default ~/.cache/memwire/tpcds); must be visible to all executors
                  --out DIR             results go to DIR/run-<timestamp>/ (default tpcds-results)
                  --query-timeout SEC   deadline per query (default 1800)
                  --help                this text
                """;
  }

  /** Thrown for {@code --help}. */
  public static final class HelpRequested extends RuntimeException {
    private static final long serialVersionUID = 1L;

    HelpRequested() {
      super("help requested");
    }
  }

  /**
   * Parses command-line arguments.
   *
   * @throws IllegalArgumentException naming the option when an argument is wrong
   * @throws HelpRequested for {@code --help}
   */
  public static RunOptions parse(String... args) {
    String master = null;
    int executors = 2;
    int executorCores = 1;
    int executorMemoryMb = 1024;
    int driverMemoryMb = 1024;
    double scale = 1;
    String queries = "default";
    int warmups = 1;
    int iterations = 3;
    int sessions = 1;
    String configs = "sort,rdma-tcp";
    boolean noBroadcast = false;
    Map<String, String> conf = new LinkedHashMap<>();
    Path dataDir = Path.of(System.getProperty("user.home"), ".cache", "memwire", "tpcds");
    Path outDir = Path.of("tpcds-results");
    long timeoutSeconds = 1800;
    for (int i = 0; i < args.length; i++) {
      String option = args[i];
      if (option.equals("--help") || option.equals("-h")) {
        throw new HelpRequested();
      }
      if (option.equals("--no-broadcast")) {
        noBroadcast = true;
        continue;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(
            option.startsWith("--")
                ? option + " needs a value"
                : "Unknown argument '" + option + "'");
      }
      String value = args[++i];
      switch (option) {
        case "--master" -> master = value;
        case "--executors" -> executors = integer(option, value);
        case "--executor-cores" -> executorCores = integer(option, value);
        case "--executor-memory" -> executorMemoryMb = integer(option, value);
        case "--driver-memory" -> driverMemoryMb = integer(option, value);
        case "--scale" -> scale = number(option, value);
        case "--queries" -> queries = value;
        case "--iterations" -> iterations = integer(option, value);
        case "--warmup" -> warmups = integer(option, value);
        case "--sessions" -> sessions = integer(option, value);
        case "--configs" -> configs = value;
        case "--conf" -> {
          int eq = value.indexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException("--conf expects KEY=VALUE, got '" + value + "'");
          }
          conf.put(value.substring(0, eq), value.substring(eq + 1));
        }
        case "--data-dir" -> dataDir = Path.of(value);
        case "--out" -> outDir = Path.of(value);
        case "--query-timeout" -> timeoutSeconds = integer(option, value);
        default ->
            throw new IllegalArgumentException("Unknown option '" + option + "' (see --help)");
      }
    }
    return new RunOptions(
        master,
        executors,
        executorCores,
        executorMemoryMb,
        driverMemoryMb,
        scale,
        queries,
        warmups,
        iterations,
        sessions,
        ShuffleConfig.parseList(configs),
        noBroadcast,
        conf,
        dataDir,
        outDir,
        Duration.ofSeconds(timeoutSeconds),
        io.memwire.tpcds.data.ChunkPlanner.DEFAULT_COST_PER_CHUNK);
  }

  private static int integer(String option, String value) {
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " expects an integer, got '" + value + "'");
    }
  }

  private static double number(String option, String value) {
    try {
      return Double.parseDouble(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " expects a number, got '" + value + "'");
    }
  }
}
