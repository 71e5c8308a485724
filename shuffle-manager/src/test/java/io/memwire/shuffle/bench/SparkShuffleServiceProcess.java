package io.memwire.shuffle.bench;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.it.ChildJvm;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Spark's own external shuffle service ({@code org.apache.spark.deploy.ExternalShuffleService}, the
 * process {@code sbin/start-shuffle-service.sh} runs) in its own JVM, on a free port. Spark 4.2's
 * service has no setting for its bind address: it listens on every interface; executors reach it at
 * their own host, 127.0.0.1 here.
 *
 * <p>Its counters are read from a CSV metrics sink (one file per metric, a line every 10 s): bytes
 * served ({@code blockTransferRateBytes}). Its log names every executor that registered.
 */
public final class SparkShuffleServiceProcess implements AutoCloseable {
  private static final String MAIN = "org.apache.spark.deploy.ExternalShuffleService";
  private static final Pattern REGISTERED =
      Pattern.compile("Registered executor .*appId=([^,\\]}\\s]+),\\s*execId=([^,\\]}\\s]+)");

  private final Process process;
  private final int port;
  private final Path log;
  private final Path metricsDir;

  private SparkShuffleServiceProcess(Process process, int port, Path log, Path metricsDir) {
    this.process = process;
    this.port = port;
    this.log = log;
    this.metricsDir = metricsDir;
  }

  /**
   * Starts the service with its log and metrics under {@code root}; returns once its port accepts
   * connections (60 s at most).
   */
  public static SparkShuffleServiceProcess start(Path root) throws IOException {
    Files.createDirectories(root);
    Path metricsDir = Files.createDirectories(root.resolve("metrics"));
    Path log = root.resolve("ess.log");
    int port = freePort();
    // Its own logging: the test classpath's log4j2-test.properties would hide the INFO lines
    // that name registered executors.
    Path logConf = root.resolve("log4j2.properties");
    Files.writeString(
        logConf,
        String.join(
            "\n",
            "rootLogger.level = warn",
            "rootLogger.appenderRef.stderr.ref = console",
            "appender.console.type = Console",
            "appender.console.name = console",
            "appender.console.target = SYSTEM_ERR",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n",
            "logger.ess.name = org.apache.spark.deploy.ExternalShuffleService",
            "logger.ess.level = info",
            "logger.resolver.name = org.apache.spark.network.shuffle.ExternalShuffleBlockResolver",
            "logger.resolver.level = info",
            ""),
        StandardCharsets.UTF_8);
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.addAll(LocalSparkCluster.driverJvmOptions());
    cmd.add("-Dlog4j2.configurationFile=" + logConf.toUri());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    // SparkConf reads spark.* system properties: the service's whole configuration.
    cmd.add("-Dspark.shuffle.service.port=" + port);
    // No recovery across restarts needed, so no RocksDB of registered executors.
    cmd.add("-Dspark.shuffle.service.db.enabled=false");
    String sink = "-Dspark.metrics.conf.shuffleService.sink.csv.";
    cmd.add(sink + "class=org.apache.spark.metrics.sink.CsvSink");
    // Every 10 s: writing its two dozen files every second would cost the service ~1% of a core.
    cmd.add(sink + "period=10");
    cmd.add(sink + "unit=seconds");
    cmd.add(sink + "directory=" + metricsDir);
    cmd.add(MAIN);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    // A spark-defaults.conf found through these would change the service's settings.
    pb.environment().remove("SPARK_HOME");
    pb.environment().remove("SPARK_CONF_DIR");
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    Process p = pb.start();
    var unused = ChildJvm.drainTo(p, log, null, "Spark's shuffle service"); // no ready line
    SparkShuffleServiceProcess ess = new SparkShuffleServiceProcess(p, port, log, metricsDir);
    try {
      ess.awaitListening(Duration.ofSeconds(60));
    } catch (IOException | RuntimeException e) {
      p.destroyForcibly();
      throw e;
    }
    return ess;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private void awaitListening(Duration timeout) throws IOException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      if (!process.isAlive()) {
        throw new IOException("Spark's shuffle service exited; see " + log);
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
        return;
      } catch (IOException notYet) {
        if (System.nanoTime() > deadline) {
          throw new IOException(
              "Spark's shuffle service not listening on " + port + " within 60 s; see " + log);
        }
      }
      try {
        process.waitFor(200, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted", e);
      }
    }
  }

  public long pid() {
    return process.pid();
  }

  public int port() {
    return port;
  }

  public Path log() {
    return log;
  }

  /** Executor ids of {@code appId} that the service's log says registered with it. */
  public Set<String> registeredExecutors(String appId) {
    Set<String> ids = new TreeSet<>();
    List<String> lines;
    try {
      lines = Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : List.of();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    for (String line : lines) {
      Matcher m = REGISTERED.matcher(line);
      if (m.find() && m.group(1).equals(appId)) {
        ids.add(m.group(2));
      }
    }
    return ids;
  }

  /**
   * Block bytes the service has sent since it started, from the last line of its CSV sink (written
   * every 10 s; 0 before the first).
   */
  public long bytesServed() {
    Path f = metricsDir.resolve("shuffleService.blockTransferRateBytes.csv");
    try {
      if (!Files.exists(f)) {
        return 0;
      }
      List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
      // t,count,mean_rate,m1_rate,m5_rate,m15_rate,rate_unit; the last line may be half written.
      for (int i = lines.size() - 1; i > 0; i--) {
        String[] cols = lines.get(i).split(",");
        if (cols.length == 7 && cols[6].endsWith("/second")) {
          return Long.parseLong(cols[1].trim());
        }
      }
      return 0;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Waits until the service has sent at least {@code bytes} block bytes (its sink lags by up to 10
   * s), and returns what it reports then.
   */
  public long awaitBytesServed(long bytes, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    long served = bytesServed();
    while (served < bytes && System.nanoTime() < deadline) {
      process.waitFor(200, TimeUnit.MILLISECONDS);
      served = bytesServed();
    }
    return served;
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      process.destroy();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }
}
