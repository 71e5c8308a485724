package io.memwire.verbscheck;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.RdmaShuffleManager;
import java.time.Duration;
import java.util.Locale;

/** The local cluster each mode of the Spark check runs on. */
final class CheckCluster {
  private static final String MANAGER = RdmaShuffleManager.class.getName();

  private CheckCluster() {}

  /**
   * Starts a 2-executor cluster with the shuffle of {@code mode} (sort, verbs or tcp) and timeouts
   * that emulated CPUs need.
   */
  static LocalSparkCluster start(
      String mode, String bind, String libdisni, Duration startup, CheckLog log) {
    LocalSparkCluster.Builder b =
        LocalSparkCluster.builder()
            .executors(2)
            .coresPerExecutor(1)
            .memoryPerExecutorMb(768)
            .appName("memwire-verbs-check-" + mode)
            .startupTimeout(startup)
            .conf("spark.shuffle.readHostLocalDisk", "false")
            .conf("spark.sql.shuffle.partitions", "8")
            // Emulated CPUs: everything is slow, nothing may time out for that reason alone.
            .conf("spark.network.timeout", "900s")
            .conf("spark.executor.heartbeatInterval", "60s")
            .conf("spark.rpc.askTimeout", "900s")
            .conf("spark.storage.blockManagerHeartbeatTimeoutMs", "900000")
            .conf("spark.locality.wait", "60s")
            .conf("spark.shuffle.io.maxRetries", "1")
            .conf("spark.shuffle.io.retryWait", "1s")
            .conf(
                "spark.executor.extraJavaOptions",
                "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED -XX:TieredStopAtLevel=1")
            .conf("spark.executor.extraLibraryPath", libdisni);
    if (mode.equals("sort")) {
      b.conf("spark.shuffle.manager", "sort");
    } else {
      b.conf("spark.shuffle.manager", MANAGER)
          .conf("spark.shuffle.rdma.provider", mode)
          .conf("spark.shuffle.rdma.fallback", "false")
          .conf("spark.shuffle.rdma.connectTimeout", "300s")
          .conf("spark.shuffle.rdma.readTimeout", "600s");
      if (mode.equals("verbs")) {
        b.conf("spark.shuffle.rdma.bindAddress", bind);
      }
    }
    long t0 = System.nanoTime();
    LocalSparkCluster c = b.start();
    log.put(
        mode + ".startSeconds", String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    return c;
  }
}
