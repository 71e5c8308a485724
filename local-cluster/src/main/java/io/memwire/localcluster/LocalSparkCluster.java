package io.memwire.localcluster;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
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

  /** The SPARK_HOME this class put into the environment, so a later cluster may replace it. */
  private static volatile String injectedSparkHome;

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
        deleteRecursively(workDir);
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
      Path home = prepareSparkHome(dir);
      String classPath = executorClassPath();

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
              .config("spark.executor.memory", memoryPerExecutorMb + "m")
              .config("spark.driver.host", LOCAL_IP)
              .config("spark.driver.bindAddress", LOCAL_IP)
              .config("spark.ui.enabled", "false")
              .config("spark.executorEnv.SPARK_DIST_CLASSPATH", classPath)
              .config("spark.executorEnv.SPARK_SCALA_VERSION", scalaVersion())
              .config("spark.executorEnv.SPARK_LOCAL_IP", LOCAL_IP);
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
          deleteRecursively(dir);
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
              + executorStderrTail(home));
    }

    private Path prepareSparkHome(Path dir) {
      String envHome = System.getenv("SPARK_HOME");
      boolean given = envHome != null && !envHome.isBlank() && !envHome.equals(injectedSparkHome);
      Path home =
          given ? Path.of(envHome).toAbsolutePath() : dir.resolve("spark-home").toAbsolutePath();
      try {
        // Workers refuse a SPARK_HOME without jars/; the classpath comes from SPARK_DIST_CLASSPATH.
        Files.createDirectories(home.resolve("jars"));
      } catch (IOException e) {
        throw new UncheckedIOException("cannot create " + home.resolve("jars"), e);
      }
      Map<String, String> missing = new LinkedHashMap<>();
      if (!given) {
        missing.put("SPARK_HOME", home.toString());
        injectedSparkHome = home.toString();
      }
      if (System.getenv("SPARK_SCALA_VERSION") == null) {
        missing.put("SPARK_SCALA_VERSION", scalaVersion());
      }
      if (System.getenv("SPARK_LOCAL_IP") == null) {
        missing.put("SPARK_LOCAL_IP", LOCAL_IP);
      }
      if (!missing.isEmpty()) {
        ProcessEnvironment.put(missing);
      }
      return home;
    }

    private String executorClassPath() {
      Set<String> entries = new LinkedHashSet<>(extraExecutorClassPath);
      entries.addAll(jvmClassPath());
      return String.join(File.pathSeparator, entries);
    }
  }

  /** Scala binary version of the Spark on the classpath, e.g. 2.13. */
  static String scalaVersion() {
    String v = scala.util.Properties$.MODULE$.versionNumberString();
    String[] parts = v.split("\\.");
    return parts.length >= 2 ? parts[0] + "." + parts[1] : v;
  }

  /**
   * This JVM's classpath entries. Surefire's manifest-only jar and Maven's exec:java hide the real
   * classpath from {@code java.class.path}; surefire publishes it in its own property, and a
   * URLClassLoader lists its URLs.
   */
  static List<String> jvmClassPath() {
    String cp = System.getProperty("surefire.test.class.path");
    if (cp == null || cp.isBlank()) {
      cp = System.getProperty("java.class.path", "");
    }
    List<String> entries =
        Arrays.stream(cp.split(File.pathSeparator))
            .filter(s -> !s.isBlank())
            .collect(Collectors.toList());
    boolean hasSpark = entries.stream().anyMatch(e -> e.contains("spark-core"));
    ClassLoader cl = Thread.currentThread().getContextClassLoader();
    if (!hasSpark && cl instanceof URLClassLoader) {
      for (URL u : ((URLClassLoader) cl).getURLs()) {
        if ("file".equals(u.getProtocol())) {
          entries.add(new File(u.getPath()).getAbsolutePath());
        }
      }
    }
    return entries;
  }

  private static String executorStderrTail(Path home) {
    Path work = home.resolve("work");
    if (!Files.isDirectory(work)) {
      return "No executor was launched (no " + work + ").";
    }
    try (Stream<Path> files = Files.walk(work)) {
      Path newest =
          files
              .filter(p -> p.getFileName().toString().equals("stderr"))
              .max(Comparator.comparingLong(p -> p.toFile().lastModified()))
              .orElse(null);
      if (newest == null) {
        return "No executor stderr under " + work + ".";
      }
      List<String> lines = Files.readAllLines(newest, StandardCharsets.UTF_8);
      List<String> tail = lines.subList(Math.max(0, lines.size() - 15), lines.size());
      return "Last lines of " + newest + ":\n" + String.join("\n", tail);
    } catch (IOException | UncheckedIOException e) {
      return "Could not read executor logs under " + work + ": " + e;
    }
  }

  private static void deleteRecursively(Path dir) {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      LOG.debug("could not delete {}", dir, e);
    }
  }

  /**
   * Sets variables in this JVM's environment view, so {@code System.getenv} (Spark's Worker and
   * driver) and child processes see them. Java has no API for this; the map behind {@code
   * System.getenv()} is reached by reflection, which {@code --add-opens=java.base/java.util}
   * permits.
   */
  static final class ProcessEnvironment {
    private ProcessEnvironment() {}

    @SuppressWarnings("unchecked")
    static void put(Map<String, String> vars) {
      Map<String, String> env = System.getenv();
      try {
        Field f = env.getClass().getDeclaredField("m");
        f.setAccessible(true);
        ((Map<String, String>) f.get(env)).putAll(vars);
      } catch (ReflectiveOperationException | RuntimeException e) {
        throw new IllegalStateException(
            "cannot set "
                + vars.keySet()
                + " in this JVM's "
                + "environment ("
                + e
                + "). Either start the JVM with "
                + "--add-opens=java.base/java.util=ALL-UNNAMED (see LocalSparkCluster."
                + "driverJvmOptions()) or set them before starting it: "
                + vars.entrySet().stream()
                    .map(en -> en.getKey() + "=" + en.getValue())
                    .collect(Collectors.joining(" ")),
            e);
      }
      for (Map.Entry<String, String> e : vars.entrySet()) {
        if (!e.getValue().equals(System.getenv(e.getKey()))) {
          throw new IllegalStateException(
              "setting "
                  + e.getKey()
                  + " in the environment did not "
                  + "take effect; set it before starting the JVM");
        }
      }
    }
  }
}
