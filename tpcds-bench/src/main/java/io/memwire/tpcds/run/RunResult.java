package io.memwire.tpcds.run;

import io.memwire.tpcds.data.DataSetInfo;
import io.memwire.tpcds.worker.ClusterInfo;
import java.util.List;
import java.util.Map;

/**
 * Everything a run measured, as written to {@code results.json}.
 *
 * @param runDir the results directory
 * @param environment host, Java, options
 * @param clusters each configuration's cluster as its driver reported it
 * @param configs the configurations, reference first
 * @param queries the queries, in run order
 * @param measurements every execution, warm-up included
 * @param stats per query and configuration, timed runs only
 * @param speedups per non-reference configuration: per query reference median / its median
 * @param geomeanSpeedup per non-reference configuration: geometric mean of its speedups
 * @param verified whether every answer equalled the reference configuration's
 * @param failure why the run stopped early, or null
 * @param failures queries that failed to run (each left out of the rounds after its failure)
 */
public record RunResult(
    String runDir,
    Map<String, Object> environment,
    List<ClusterInfo> clusters,
    List<ShuffleConfig> configs,
    List<String> queries,
    DataSetInfo dataSet,
    List<Measurement> measurements,
    List<QueryStats> stats,
    Map<String, Map<String, Double>> speedups,
    Map<String, Double> geomeanSpeedup,
    boolean verified,
    String failure,
    List<QueryFailure> failures) {

  /** The reference configuration's name. */
  public String reference() {
    return configs.get(0).name();
  }

  /** Statistics of {@code query} with {@code config}, or null when it has no timed run. */
  public QueryStats stats(String query, String config) {
    return stats.stream()
        .filter(s -> s.query().equals(query) && s.config().equals(config))
        .findFirst()
        .orElse(null);
  }
}
