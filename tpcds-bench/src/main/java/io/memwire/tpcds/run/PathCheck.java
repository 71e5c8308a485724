package io.memwire.tpcds.run;

import io.memwire.tpcds.verify.PathCheckException;
import io.memwire.tpcds.worker.PathCounters;
import io.memwire.tpcds.worker.QueryRun;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Memwire configuration must have moved every remote byte one-sided; otherwise its timings
 * measure something else and the run stops.
 */
final class PathCheck {
  private static final Logger LOG = LoggerFactory.getLogger(PathCheck.class);

  private PathCheck() {}

  /**
   * Throws when {@code run} of {@code query} on {@code config}, a Memwire configuration, did not
   * move all its remote bytes one-sided; other configurations pass.
   *
   * @throws PathCheckException naming the query, the configuration and the counters
   */
  static void check(String query, ShuffleConfig config, QueryRun run) {
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
}
