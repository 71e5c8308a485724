package io.memwire.verbscheck;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.localcluster.SparkKeys;
import io.memwire.shuffle.RdmaShuffleManager;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/** The local cluster each mode of the Spark check runs on. */
final class CheckCluster {
  private static final String MANAGER = RdmaShuffleManager.class.getName();

  /**
   * Settings of every guest's Spark: emulated CPUs make everything slow, and nothing may time out
   * for that reason alone; a failed fetch is retried once, soon.
   */
  static final Map<String, String> EMULATED =
      Map.of(
          SparkKeys.NETWORK_TIMEOUT, "900s",
          SparkKeys.EXECUTOR_HEARTBEAT_INTERVAL, "60s",
          SparkKeys.RPC_ASK_TIMEOUT, "900s",
          SparkKeys.BLOCK_MANAGER_HEARTBEAT_TIMEOUT, "900000",
          SparkKeys.SHUFFLE_IO_MAX_RETRIES, "1",
          SparkKeys.SHUFFLE_IO_RETRY_WAIT, "1s",
          SparkKeys.EXECUTOR_EXTRA_JAVA_OPTIONS,
              "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED -XX:TieredStopAtLevel=1");

  private CheckCluster() {}

  /**
   * Starts a 2-executor cluster with the shuffle of {@code mode} (sort, verbs, ucx or tcp) and
   * timeouts that emulated CPUs need; under {@code workDir} when given (kept after close), else in
   * a temporary directory.
   */
  static LocalSparkCluster start(
      String mode, String bind, String libdisni, Duration startup, Path workDir, CheckLog log) {
    LocalSparkCluster.Builder b =
        LocalSparkCluster.builder()
            .executors(2)
            .coresPerExecutor(1)
            .memoryPerExecutorMb(768)
            .appName("memwire-verbs-check-" + mode)
            .startupTimeout(startup)
            .conf(SparkKeys.READ_HOST_LOCAL_DISK, "false")
            .conf(SparkKeys.SQL_SHUFFLE_PARTITIONS, "8")
            .conf(SparkKeys.LOCALITY_WAIT, "60s")
            .conf(SparkKeys.EXECUTOR_EXTRA_LIBRARY_PATH, libdisni);
    EMULATED.forEach(b::conf);
    if (workDir != null) {
      b.workDir(workDir);
    }
    if (mode.equals("sort")) {
      b.conf(SparkKeys.SHUFFLE_MANAGER, "sort");
    } else {
      b.conf(SparkKeys.SHUFFLE_MANAGER, MANAGER)
          .conf(SparkKeys.MEMWIRE_PROVIDER, mode)
          .conf(SparkKeys.MEMWIRE_FALLBACK, "false")
          .conf(SparkKeys.MEMWIRE_CONNECT_TIMEOUT, "300s")
          .conf(SparkKeys.MEMWIRE_READ_TIMEOUT, "600s");
      if (mode.equals("verbs") || mode.equals("ucx")) {
        b.conf(SparkKeys.MEMWIRE_BIND_ADDRESS, bind);
      }
      if (mode.equals("ucx")) {
        // Executors inherit the driver's environment (UCX_ERROR_SIGNALS=) and class path.
        UcxCheckSettings.given().forEach((k, v) -> b.conf("spark.shuffle.rdma." + k, v));
      }
    }
    long t0 = System.nanoTime();
    LocalSparkCluster c = b.start();
    log.put(
        mode + ".startSeconds", String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    return c;
  }
}
