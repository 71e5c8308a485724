package io.memwire.localcluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.launcher.JavaModuleOptions;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real multi-process Spark cluster ({@code local-cluster[N,C,M]}) started from the Maven
 * classpath, without a Spark distribution: a Master and N Workers run inside this JVM and each
 * Worker launches one executor JVM.
 *
 * <pre>{@code
 * try (LocalSparkCluster cluster = LocalSparkCluster.builder().executors(2).start()) {
 *   long n = cluster.session().range(1000).count();
 * }
 * }</pre>
 *
 * <p>How it works: Workers launch executors with {@code $SPARK_HOME/jars/*} plus {@code
 * SPARK_DIST_CLASSPATH}. This class generates a SPARK_HOME whose {@code jars/} is empty and passes
 * the current JVM's classpath (plus {@link Builder#extraExecutorClassPath}) as SPARK_DIST_CLASSPATH
 * through {@code spark.executorEnv.*}. A Worker reads SPARK_HOME, and the driver reads
 * SPARK_LOCAL_IP, from the process environment; when they are not set, this class sets them in this
 * JVM's environment view (reflection on {@code java.util}, which needs the {@code
 * --add-opens=java.base/java.util=ALL-UNNAMED} that {@link #driverJvmOptions()} includes).
 *
 * <p>The driver JVM must run with {@link #driverJvmOptions()}; executors get them from Spark. One
 * cluster per JVM at a time (Spark allows one active SparkContext).
 */
public final class LocalSparkCluster implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LocalSparkCluster.class);
  private static final String LOCAL_IP = "127.0.0.1";

  private final SparkSession session;
  private final Path sparkHome;
  private final Path workDir;
  private final boolean deleteWorkDir;
  private final int executors;
  private volatile boolean closed;

  private LocalSparkCluster(
      SparkSession session, Path sparkHome, Path workDir, boolean deleteWorkDir, int executors) {
    this.session = session;
    this.sparkHome = sparkHome;
    this.workDir = workDir;
    this.deleteWorkDir = deleteWorkDir;
    this.executors = executors;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * The JVM options a driver JVM needs on Java 17+ (Spark's {@code JavaModuleOptions}: {@code
   * --add-opens} and friends), for surefire argLines and launchers. Spark 4 returns them as an
   * array ({@code defaultModuleOptionArray()}); 3.5 has only {@code defaultModuleOptions()}, one
   * space-separated string: whichever the running Spark has is used.
   */
  public static List<String> driverJvmOptions() {
    try {
      Method array = JavaModuleOptions.class.getMethod("defaultModuleOptionArray");
      return List.of((String[]) array.invoke(null));
    } catch (NoSuchMethodException e) {
      return Arrays.stream(JavaModuleOptions.defaultModuleOptions().trim().split("\\s+"))
          .filter(s -> !s.isEmpty())
          .collect(Collectors.toUnmodifiableList());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot read Spark's JavaModuleOptions", e);
    }
  }

  public SparkSession session() {
    return session;
  }

  public SparkContext sparkContext() {
    return session.sparkContext();
  }

  /** A Java-friendly view of {@link #sparkContext()} (closing it is not needed). */
  public JavaSparkContext javaSparkContext() {
    return JavaSparkContext.fromSparkContext(session.sparkContext());
  }

  /** The generated (or environment-given) SPARK_HOME; executor logs are under {@code work/}. */
  public Path sparkHome() {
    return sparkHome;
  }

  public int executors() {
    return executors;
  }

  /** Executors currently registered with the driver (the driver itself not counted). */
  public int registeredExecutors() {
    return session.sparkContext().statusTracker().getExecutorInfos().length - 1;
  }

  /** Stops the session (and with it Master, Workers and executors); idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      session.stop();
    } finally {
      if (deleteWorkDir) {
        ClusterEnvironment.deleteRecursively(workDir);
      }
    }
  }

  /** Settings for {@link LocalSparkCluster}; every setter validates its argument. */
  public static final class Builder {
    private int executors = 2;
    private int awaitExecutors = -1;
    private int coresPerExecutor = 1;
    private int memoryPerExecutorMb = 1024;
    private final Map<String, String> conf = new LinkedHashMap<>();
    private final List<String> extraExecutorClassPath = new ArrayList<>();
    private String appName = "memwire-local-cluster";
    private Duration startupTimeout = Duration.ofSeconds(90);
    private Path workDir;

    private Builder() {}

    /** Number of executors (one Worker each); default 2. */
    public Builder executors(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("executors must be >= 1, got " + n);
      }
      this.executors = n;
      return this;
    }

    /**
     * How many executors {@link #start} waits for; default all. With dynamic allocation executors
     * may be released before they all registered, so such clusters wait for fewer (0: none).
     */
    public Builder awaitExecutors(int n) {
      if (n < 0) {
        throw new IllegalArgumentException("awaitExecutors must be >= 0, got " + n);
      }
      this.awaitExecutors = n;
      return this;
    }

    /** Cores per executor; default 1. */
    public Builder coresPerExecutor(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("coresPerExecutor must be >= 1, got " + n);
      }
      this.coresPerExecutor = n;
      return this;
    }

    /** Memory per executor (and per Worker) in MiB; default 1024. */
    public Builder memoryPerExecutorMb(int mb) {
      if (mb < 256) {
        throw new IllegalArgumentException("memoryPerExecutorMb must be >= 256, got " + mb);
      }
      this.memoryPerExecutorMb = mb;
      return this;
    }

    /** One Spark setting; applied after this class's defaults, so it can override them. */
    public Builder conf(String key, String value) {
      conf.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, key));
      return this;
    }

    public Builder conf(Map<String, String> settings) {
      settings.forEach(this::conf);
      return this;
    }

    /** Classpath entries added to the executors' classpath (before the JVM's own). */
    public Builder extraExecutorClassPath(String... entries) {
      extraExecutorClassPath.addAll(Arrays.asList(entries));
      return this;
    }

    public Builder appName(String name) {
      this.appName = Objects.requireNonNull(name, "appName");
      return this;
    }

    /** How long to wait for all executors to register; default 90 s. */
    public Builder startupTimeout(Duration timeout) {
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("startupTimeout must be positive, got " + timeout);
      }
      this.startupTimeout = timeout;
      return this;
    }

    /**
     * Directory for the generated SPARK_HOME (and executors' work dirs); default a temporary
     * directory deleted on close. Ignored for SPARK_HOME when the environment already sets it.
     */
    public Builder workDir(Path dir) {
      this.workDir = Objects.requireNonNull(dir, "workDir");
      return this;
    }

    /**
     * Starts the cluster and waits until every executor has registered.
     *
     * @throws IllegalStateException when a SparkContext is already active, the environment cannot
     *     be prepared, or executors do not register within the startup timeout (the message
     *     includes the tail of an executor's stderr)
     */
    public LocalSparkCluster start() {
      if (org.apache.spark.SparkContext$.MODULE$.getActive().isDefined()) {
        throw new IllegalStateException(
            "a SparkContext is already active in this JVM; close it "
                + "(or the other LocalSparkCluster) first");
      }
      boolean tempDir = workDir == null;
      Path dir;
      try {
        dir =
            tempDir
                ? Files.createTempDirectory("memwire-cluster")
                : Files.createDirectories(workDir);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot create the cluster work dir " + workDir, e);
      }
      Path home = ClusterEnvironment.prepareSparkHome(dir, LOCAL_IP);
      String classPath = ClusterEnvironment.executorClassPath(extraExecutorClassPath);

      SparkSession.Builder b =
          SparkSession.builder()
              .master(
                  "local-cluster["
                      + executors
                      + ","
                      + coresPerExecutor
                      + ","
                      + memoryPerExecutorMb
                      + "]")
              .appName(appName)
              .config(SparkKeys.EXECUTOR_MEMORY, memoryPerExecutorMb + "m")
              .config(SparkKeys.DRIVER_HOST, LOCAL_IP)
              .config(SparkKeys.DRIVER_BIND_ADDRESS, LOCAL_IP)
              .config(SparkKeys.UI_ENABLED, "false")
              .config(SparkKeys.EXECUTOR_ENV_PREFIX + "SPARK_DIST_CLASSPATH", classPath)
              .config(
                  SparkKeys.EXECUTOR_ENV_PREFIX + "SPARK_SCALA_VERSION",
                  ClusterEnvironment.scalaVersion())
              .config(SparkKeys.EXECUTOR_ENV_PREFIX + "SPARK_LOCAL_IP", LOCAL_IP);
      for (Map.Entry<String, String> e : conf.entrySet()) {
        b.config(e.getKey(), e.getValue());
      }
      long t0 = System.nanoTime();
      SparkSession session = b.getOrCreate();
      try {
        awaitExecutors(session, home, t0);
      } catch (RuntimeException e) {
        session.stop();
        if (tempDir) {
          ClusterEnvironment.deleteRecursively(dir);
        }
        throw e;
      }
      LOG.info(
          "local-cluster[{},{},{}] up in {} ms, SPARK_HOME {}",
          executors,
          coresPerExecutor,
          memoryPerExecutorMb,
          (System.nanoTime() - t0) / 1_000_000,
          home);
      return new LocalSparkCluster(session, home, dir, tempDir, executors);
    }

    private void awaitExecutors(SparkSession session, Path home, long t0) {
      long deadline = t0 + startupTimeout.toNanos();
      int seen = 0;
      while (System.nanoTime() < deadline) {
        seen = session.sparkContext().statusTracker().getExecutorInfos().length - 1;
        if (seen >= (awaitExecutors < 0 ? executors : Math.min(awaitExecutors, executors))) {
          return;
        }
        if (session.sparkContext().isStopped()) {
          break;
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted while waiting for executors", e);
        }
      }
      throw new IllegalStateException(
          seen
              + " of "
              + executors
              + " executors registered within "
              + startupTimeout.toSeconds()
              + " s (SPARK_HOME "
              + home
              + "). "
              + ClusterEnvironment.executorStderrTail(home));
    }
  }
}
