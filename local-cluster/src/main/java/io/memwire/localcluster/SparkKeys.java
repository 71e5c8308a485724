package io.memwire.localcluster;

/**
 * Every Spark configuration key the project's applications and launchers set or read (the main job,
 * the TPC-DS runner, verbs-check, this module), declared once. They are compile-time constants so a
 * launcher without Spark's or Memwire's classes on its class path can use them.
 *
 * <p>Spark's own keys are checked against Spark's configuration registry ({@code SparkKeysTest});
 * Memwire's ({@code MEMWIRE_*}) against their declarations in the shuffle manager's settings
 * ({@code AppKeysTest} in shuffle-manager), so a key renamed on either side fails a test instead of
 * being silently ignored by Spark.
 */
public final class SparkKeys {
  private SparkKeys() {}

  /** Spark's shuffle manager class or short name. */
  public static final String SHUFFLE_MANAGER = "spark.shuffle.manager";

  /** Whether executors on one host read each other's shuffle files from disk. */
  public static final String READ_HOST_LOCAL_DISK = "spark.shuffle.readHostLocalDisk";

  /** Retries of a failed shuffle fetch through Spark's block transfer. */
  public static final String SHUFFLE_IO_MAX_RETRIES = "spark.shuffle.io.maxRetries";

  /** Wait between those retries. */
  public static final String SHUFFLE_IO_RETRY_WAIT = "spark.shuffle.io.retryWait";

  /** Reduce partitions of a SQL shuffle. */
  public static final String SQL_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions";

  /** Largest table broadcast in a join (-1: never). */
  public static final String SQL_AUTO_BROADCAST_JOIN_THRESHOLD =
      "spark.sql.autoBroadcastJoinThreshold";

  /** The same limit for adaptive query execution. */
  public static final String SQL_ADAPTIVE_AUTO_BROADCAST_JOIN_THRESHOLD =
      "spark.sql.adaptive.autoBroadcastJoinThreshold";

  /** Adaptive query execution. */
  public static final String SQL_ADAPTIVE_ENABLED = "spark.sql.adaptive.enabled";

  /** java.time types in Spark SQL's Java API. */
  public static final String SQL_DATETIME_JAVA8_API = "spark.sql.datetime.java8API.enabled";

  /** Spark's web UI. */
  public static final String UI_ENABLED = "spark.ui.enabled";

  /** The console progress bar. */
  public static final String UI_SHOW_CONSOLE_PROGRESS = "spark.ui.showConsoleProgress";

  /** Default timeout of every network interaction. */
  public static final String NETWORK_TIMEOUT = "spark.network.timeout";

  /** Timeout of an RPC ask. */
  public static final String RPC_ASK_TIMEOUT = "spark.rpc.askTimeout";

  /** Executors' heartbeat interval to the driver. */
  public static final String EXECUTOR_HEARTBEAT_INTERVAL = "spark.executor.heartbeatInterval";

  /** How long the driver waits for a block manager's heartbeat. */
  public static final String BLOCK_MANAGER_HEARTBEAT_TIMEOUT =
      "spark.storage.blockManagerHeartbeatTimeoutMs";

  /** How long the scheduler waits for a data-local slot. */
  public static final String LOCALITY_WAIT = "spark.locality.wait";

  /** An executor's heap. */
  public static final String EXECUTOR_MEMORY = "spark.executor.memory";

  /** Extra JVM options of every executor. */
  public static final String EXECUTOR_EXTRA_JAVA_OPTIONS = "spark.executor.extraJavaOptions";

  /** Extra native library path of every executor. */
  public static final String EXECUTOR_EXTRA_LIBRARY_PATH = "spark.executor.extraLibraryPath";

  /** Extra class path of every executor. */
  public static final String EXECUTOR_EXTRA_CLASS_PATH = "spark.executor.extraClassPath";

  /** Host name the driver advertises. */
  public static final String DRIVER_HOST = "spark.driver.host";

  /** Address the driver binds. */
  public static final String DRIVER_BIND_ADDRESS = "spark.driver.bindAddress";

  /** Prefix of the environment variables set on every executor. */
  public static final String EXECUTOR_ENV_PREFIX = "spark.executorEnv.";

  /** The local property naming a job's group (a job-scoped property, not a configuration). */
  public static final String JOB_GROUP_ID = "spark.jobGroup.id";

  /** Memwire's block-transfer provider (auto, verbs, ucx, tcp). */
  public static final String MEMWIRE_PROVIDER = "spark.shuffle.rdma.provider";

  /** Memwire's switch for serving a block through Spark's transfer when it cannot be read. */
  public static final String MEMWIRE_FALLBACK = "spark.shuffle.rdma.fallback";

  /** Memwire's connect timeout. */
  public static final String MEMWIRE_CONNECT_TIMEOUT = "spark.shuffle.rdma.connectTimeout";

  /** Memwire's read timeout. */
  public static final String MEMWIRE_READ_TIMEOUT = "spark.shuffle.rdma.readTimeout";

  /** Memwire's switch for checking blocks against the checksums Spark wrote. */
  public static final String MEMWIRE_VERIFY_BLOCKS = "spark.shuffle.rdma.verifyBlocks";

  /** The address Memwire's transport binds. */
  public static final String MEMWIRE_BIND_ADDRESS = "spark.shuffle.rdma.bindAddress";

  /** Spark's own keys above (configurations known to Spark's registry). */
  static final java.util.List<String> SPARK_CONFIGURATIONS =
      java.util.List.of(
          SHUFFLE_MANAGER,
          READ_HOST_LOCAL_DISK,
          SHUFFLE_IO_MAX_RETRIES,
          SHUFFLE_IO_RETRY_WAIT,
          SQL_SHUFFLE_PARTITIONS,
          SQL_AUTO_BROADCAST_JOIN_THRESHOLD,
          SQL_ADAPTIVE_AUTO_BROADCAST_JOIN_THRESHOLD,
          SQL_ADAPTIVE_ENABLED,
          SQL_DATETIME_JAVA8_API,
          UI_ENABLED,
          UI_SHOW_CONSOLE_PROGRESS,
          NETWORK_TIMEOUT,
          RPC_ASK_TIMEOUT,
          EXECUTOR_HEARTBEAT_INTERVAL,
          BLOCK_MANAGER_HEARTBEAT_TIMEOUT,
          LOCALITY_WAIT,
          EXECUTOR_MEMORY,
          EXECUTOR_EXTRA_JAVA_OPTIONS,
          EXECUTOR_EXTRA_LIBRARY_PATH,
          EXECUTOR_EXTRA_CLASS_PATH,
          DRIVER_HOST,
          DRIVER_BIND_ADDRESS);

  /** Memwire's keys above, for the test that checks them against their declarations. */
  public static final java.util.List<String> MEMWIRE_KEYS =
      java.util.List.of(
          MEMWIRE_PROVIDER,
          MEMWIRE_FALLBACK,
          MEMWIRE_CONNECT_TIMEOUT,
          MEMWIRE_READ_TIMEOUT,
          MEMWIRE_BIND_ADDRESS);
}
