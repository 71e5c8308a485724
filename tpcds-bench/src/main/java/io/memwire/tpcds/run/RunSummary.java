package io.memwire.tpcds.run;

import io.memwire.tpcds.data.DataSetInfo;
import io.memwire.tpcds.worker.ClusterInfo;
import java.io.IOException;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns a run's measurements into its {@link RunResult}: per query and configuration the statistics
 * of the timed runs, each configuration's speed-up over the reference (per query, and their
 * geometric mean), and the environment the run measured.
 */
final class RunSummary {
  private final RunOptions options;
  private final String clusterDescription;
  private final long startNanos;

  /**
   * @param clusterDescription the cluster each configuration ran on, as the report shows it
   * @param startNanos when the run started ({@link System#nanoTime})
   */
  RunSummary(RunOptions options, String clusterDescription, long startNanos) {
    this.options = options;
    this.clusterDescription = clusterDescription;
    this.startNanos = startNanos;
  }

  RunResult result(
      Path runDir,
      List<ShuffleConfig> configs,
      List<String> queries,
      DataSetInfo dataSet,
      List<ClusterInfo> clusters,
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
    env.put("sparkVersion", clusters.isEmpty() ? "?" : clusters.get(0).sparkVersion());
    env.put("master", options.localCluster() ? clusterDescription : options.master());
    env.put("executors", clusters.isEmpty() ? 0 : clusters.get(0).executors());
    env.put("scale", options.scale());
    env.put("noBroadcast", options.noBroadcast());
    env.put("warmups", options.warmups());
    env.put("iterations", options.iterations());
    env.put("sessions", options.sessions());
    env.put("durationSeconds", (System.nanoTime() - startNanos) / 1e9);
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

  private static String hostName() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "?";
    }
  }
}
