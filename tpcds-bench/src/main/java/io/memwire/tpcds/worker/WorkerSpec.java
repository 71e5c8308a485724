package io.memwire.tpcds.worker;

import java.util.Map;

/**
 * What one query worker (a driver JVM with its own SparkContext) runs on.
 *
 * @param configName name of the shuffle configuration, for logs and reports
 * @param sparkConf every Spark setting of the configuration (shuffle manager, broadcast thresholds,
 *     ...)
 * @param master a Spark master URL, or null for a local multi-process cluster started by the worker
 * @param executors executors of the local cluster
 * @param coresPerExecutor cores per executor of the local cluster
 * @param executorMemoryMb memory per executor of the local cluster, MiB
 * @param workDir directory for the local cluster's SPARK_HOME and executor logs
 */
public record WorkerSpec(
    String configName,
    Map<String, String> sparkConf,
    String master,
    int executors,
    int coresPerExecutor,
    int executorMemoryMb,
    String workDir) {}
