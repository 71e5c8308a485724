package io.memwire.shuffle.it;

import io.memwire.localcluster.LocalSparkCluster;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.sql.SparkSession;

/**
 * Results of {@link ShuffleJobs} under Spark's own SortShuffleManager on the same kind of cluster,
 * computed once per test JVM (job results do not depend on codec, serializer or encryption).
 */
final class Reference {
  private static Map<String, List<String>> results;

  private Reference() {}

  static synchronized Map<String, List<String>> results() {
    if (results == null) {
      Map<String, List<String>> r = new LinkedHashMap<>();
      try (LocalSparkCluster cluster = Clusters.start("sort", Map.of())) {
        for (Map.Entry<String, Function<SparkSession, List<String>>> job :
            ShuffleJobs.all(true).entrySet()) {
          r.put(job.getKey(), job.getValue().apply(cluster.session()));
        }
      }
      results = r;
    }
    return results;
  }
}
