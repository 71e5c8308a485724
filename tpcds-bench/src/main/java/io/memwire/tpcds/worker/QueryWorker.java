package io.memwire.tpcds.worker;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.localcluster.SparkKeys;
import io.memwire.shuffle.metrics.ExecutorCounters;
import io.memwire.tpcds.data.ChunkPlanner;
import io.memwire.tpcds.data.DataSetInfo;
import io.memwire.tpcds.data.TpcdsDataGenerator;
import io.memwire.tpcds.verify.Answer;
import io.memwire.tpcds.worker.WorkerMessages.Request;
import io.memwire.tpcds.worker.WorkerMessages.Response;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A driver JVM that owns one SparkContext for one shuffle configuration and runs requests from the
 * benchmark (see {@link WorkerMessages}). Spark reads {@code spark.shuffle.manager} once per
 * SparkContext, and a JVM holds one SparkContext, so each configuration gets its own worker
 * process; keeping them all alive lets the benchmark interleave configurations without restarting
 * clusters.
 *
 * <p>Usage: {@code java <Spark's --add-opens> -cp <classpath> io.memwire.tpcds.worker.QueryWorker
 * '<WorkerSpec JSON>'}. The worker exits when its stdin closes.
 */
public final class QueryWorker implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(QueryWorker.class);
  private static final long LISTENER_TIMEOUT_MS = 60_000;
  private static final Duration COUNTERS_TIMEOUT = Duration.ofSeconds(60);

  private final PrintStream protocol;
  private final SparkSession spark;
  private final LocalSparkCluster cluster;
  private final TaskMetricsCollector collector;
  private final ClusterInfo info;

  private QueryWorker(WorkerSpec spec, PrintStream protocol) {
    this.protocol = protocol;
    long start = System.nanoTime();
    if (spec.master() == null) {
      cluster =
          LocalSparkCluster.builder()
              .executors(spec.executors())
              .coresPerExecutor(spec.coresPerExecutor())
              .memoryPerExecutorMb(spec.executorMemoryMb())
              .appName("memwire-tpcds-" + spec.configName())
              .workDir(Path.of(spec.workDir()))
              .startupTimeout(Duration.ofMinutes(3))
              .conf(spec.sparkConf())
              .start();
      spark = cluster.session();
    } else {
      cluster = null;
      SparkSession.Builder builder =
          SparkSession.builder()
              .master(spec.master())
              .appName("memwire-tpcds-" + spec.configName());
      spec.sparkConf().forEach(builder::config);
      spark = builder.getOrCreate();
    }
    collector = TaskMetricsCollector.register(spark.sparkContext());
    Map<String, String> conf = new TreeMap<>();
    for (scala.Tuple2<String, String> kv : spark.sparkContext().getConf().getAll()) {
      conf.put(kv._1(), kv._2());
    }
    conf.keySet()
        .removeIf(
            k ->
                k.startsWith(SparkKeys.EXECUTOR_ENV_PREFIX)
                    || k.contains("ClassPath")
                    || k.contains("secret"));
    int executors = spark.sparkContext().statusTracker().getExecutorInfos().length - 1;
    info =
        new ClusterInfo(
            spec.configName(),
            spark.version(),
            spark.sparkContext().master(),
            executors,
            System.getProperty("java.version"),
            conf,
            (System.nanoTime() - start) / 1e9);
    LOG.info(
        "Worker for configuration {} ready: {} with {} executors, shuffle manager {}",
        spec.configName(),
        info.master(),
        executors,
        conf.getOrDefault(SparkKeys.SHUFFLE_MANAGER, "sort"));
  }

  /** Entry point; see the class comment. */
  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: QueryWorker '<WorkerSpec JSON>'");
      System.exit(2);
    }
    // Protocol lines go to the real stdout; anything else printing to System.out lands in the log.
    PrintStream protocol =
        new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    WorkerSpec spec = WorkerMessages.JSON.readValue(args[0], WorkerSpec.class);
    QueryWorker worker;
    try {
      worker = new QueryWorker(spec, protocol);
    } catch (Throwable t) {
      LOG.error("Worker for {} failed to start", spec.configName(), t);
      reply(
          protocol,
          Response.failed(
              "cluster for configuration '"
                  + spec.configName()
                  + "' failed to start: "
                  + describe(t)));
      System.exit(1);
      return;
    }
    int status = 0;
    try (worker) {
      reply(protocol, Response.ready(worker.info));
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null) {
        Request request = WorkerMessages.JSON.readValue(line, Request.class);
        if (request.op() == WorkerMessages.Op.QUIT) {
          reply(protocol, Response.done());
          break;
        }
        reply(protocol, worker.handle(request));
      }
    } catch (Throwable t) {
      LOG.error("Worker for {} failed", spec.configName(), t);
      status = 1;
    }
    System.exit(status);
  }

  private Response handle(Request request) {
    try {
      return switch (request.op()) {
        case GENERATE -> new Response(true, null, null, generate(request), null);
        case LOAD -> {
          TpcdsDataGenerator.registerTables(spark, Path.of(request.dataDir()));
          yield Response.done();
        }
        case RUN -> new Response(true, null, null, null, run(request.query(), request.sql()));
        case QUIT -> Response.done();
      };
    } catch (Throwable t) {
      LOG.error("{} failed", request.op(), t);
      return Response.failed(
          request.op()
              + (request.query() == null ? "" : " " + request.query())
              + " failed: "
              + describe(t));
    }
  }

  private DataSetInfo generate(Request request) {
    ChunkPlanner planner = new ChunkPlanner(request.costPerChunk());
    TpcdsDataGenerator generator =
        new TpcdsDataGenerator(
            spark,
            planner,
            line -> {
              LOG.info(line);
              protocol.println(WorkerMessages.PROGRESS_PREFIX + line);
            });
    return generator.generateOrReuse(Path.of(request.dataDir()), request.scale());
  }

  private QueryRun run(String query, String sql) throws Exception {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    // Read outside the timed region: a tiny job per executor before and after the query.
    Map<String, Long> before = ExecutorCounters.sum(jsc, COUNTERS_TIMEOUT);
    TaskMetricsCollector.Measured<Timed> measured =
        collector.measure(
            spark.sparkContext(),
            query,
            () -> {
              long start = System.nanoTime();
              Dataset<Row> df = spark.sql(sql);
              List<Row> rows = df.collectAsList();
              long wall = System.nanoTime() - start;
              return new Timed(wall, Answer.of(df.schema(), rows));
            },
            LISTENER_TIMEOUT_MS);
    PathCounters path = PathCounters.between(before, ExecutorCounters.sum(jsc, COUNTERS_TIMEOUT));
    return new QueryRun(
        query, measured.value().wallNanos(), measured.metrics(), path, measured.value().answer());
  }

  /** Wall time of planning plus collect, and the answer (encoded outside the timed region). */
  private record Timed(long wallNanos, Answer answer) {}

  private static void reply(PrintStream protocol, Response response) throws Exception {
    protocol.println(WorkerMessages.PREFIX + WorkerMessages.JSON.writeValueAsString(response));
  }

  private static String describe(Throwable t) {
    StringBuilder sb = new StringBuilder(String.valueOf(t));
    for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
      sb.append("; caused by ").append(c);
    }
    return sb.toString();
  }

  @Override
  public void close() {
    if (cluster != null) {
      cluster.close();
    } else {
      spark.stop();
    }
  }
}
