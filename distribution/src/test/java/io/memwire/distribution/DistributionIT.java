package io.memwire.distribution;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Installs {@code memwire-<version>-bin.tar.gz} in an empty directory and uses it there, with no
 * source tree and no Maven: the shuffle service starts and passes its health check, the doctor and
 * {@code diagnose} run, and a Spark job (a node's Spark installation: the runtime main-job
 * assembles; the application: main-job's) runs with the unpacked Spark plugin jar.
 */
class DistributionIT {
  /**
   * Longest any one command may take: the Spark job takes about a minute on an idle two-core
   * machine, several when other builds load it.
   */
  private static final long TIMEOUT_S = 420;

  @TempDir Path tmp;

  @Test
  void unpackedDistributionRunsTheServiceToolsAndASparkJob() throws Exception {
    String version = System.getProperty("memwire.dist.version");
    Path tarball = Path.of(System.getProperty("memwire.dist.tarball"));
    assertTrue(Files.isRegularFile(tarball), "no " + tarball);
    Path install = tmp.resolve("install");
    Files.createDirectories(install);
    Path work = tmp.resolve("work"); // the current directory of every command: not the checkout
    Files.createDirectories(work);
    run(install, List.of("tar", "xzf", tarball.toString()), Map.of(), 0);
    Path home = install.resolve("memwire-" + version);
    for (String f :
        List.of(
            "bin/memwire",
            "lib/memwire-shuffle-manager-" + version + "-spark.jar",
            "lib/memwire-shuffle-service-" + version + ".jar",
            "lib/tools/memwire-transfer-tools-" + version + ".jar",
            "lib/ucx/memwire-block-transfer-ucx-" + version + ".jar",
            "lib/ucx/jucx-1.15.0.jar",
            "conf/shuffle-service/shuffle-service.properties",
            "systemd/memwire-shuffle-service.service",
            "grafana/memwire-dashboard.json",
            "docs/DEPLOY.md",
            "README.md")) {
      assertTrue(Files.exists(home.resolve(f)), "the distribution lacks " + f);
    }
    Path memwire = home.resolve("bin/memwire");
    assertTrue(Files.isExecutable(memwire));

    int httpPort = freePort();
    Path serviceLog = tmp.resolve("service.log");
    Path socket = tmp.resolve("svc.sock");
    Process service =
        new ProcessBuilder(
                memwire.toString(),
                "shuffle-service",
                "--conf",
                "memwire.shuffle.service.socket=" + socket,
                "--conf",
                "memwire.shuffle.service.dir=" + tmp.resolve("svc"),
                "--conf",
                "memwire.shuffle.service.transfer.provider=tcp",
                "--conf",
                "memwire.shuffle.service.transfer.bindAddress=127.0.0.1",
                "--conf",
                "memwire.shuffle.service.transfer.port=0",
                "--conf",
                "memwire.shuffle.service.http.host=127.0.0.1",
                "--conf",
                "memwire.shuffle.service.http.port=" + httpPort)
            .directory(work.toFile())
            .redirectErrorStream(true)
            .redirectOutput(serviceLog.toFile())
            .start();
    try {
      awaitReady(service, httpPort, serviceLog);
      String metrics = get(httpPort, "/metrics");
      assertTrue(metrics.contains("memwire"), metrics);

      String doctor =
          run(work, List.of(memwire.toString(), "doctor", "--provider", "tcp"), Map.of(), 0);
      assertTrue(doctor.contains("memwire doctor:"), doctor);

      Path report = tmp.resolve("report.txt");
      run(
          work,
          List.of(
              memwire.toString(),
              "diagnose",
              "--out",
              report.toString(),
              "--interval",
              "0.2",
              "--service",
              "127.0.0.1:" + httpPort,
              "--log",
              serviceLog.toString(),
              "--",
              "--provider",
              "tcp"),
          Map.of(),
          0);
      String r = Files.readString(report);
      assertTrue(r.contains("memwire " + version), r);
      assertTrue(r.contains("/health: live") && r.contains("/health/ready: ready"), r);
      assertTrue(r.contains("## NIC counters") && r.contains("## could not read"), r);

      sparkJob(memwire, home, version, work);
    } finally {
      service.descendants().forEach(ProcessHandle::destroy);
      service.destroy();
      if (!service.waitFor(30, TimeUnit.SECONDS)) {
        service.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    }
    String log = Files.readString(serviceLog);
    assertTrue(log.contains("memwire"), log);
  }

  /** One shuffle job on two executors with the unpacked plugin jar; reads went one-sided. */
  private void sparkJob(Path memwire, Path home, String version, Path work) throws Exception {
    Path sparkHome = Path.of(System.getProperty("memwire.it.sparkHome"));
    Path appJar = Path.of(System.getProperty("memwire.it.appJar"));
    Path recordsJar = Path.of(System.getProperty("memwire.it.recordsJar"));
    Path plugin = home.resolve("lib/memwire-shuffle-manager-" + version + "-spark.jar");
    Path result = tmp.resolve("result.json");
    List<String> cmd =
        new ArrayList<>(
            List.of(
                memwire.toString(),
                "spark-submit",
                "--master",
                "local-cluster[2,1,1024]",
                "--conf",
                "spark.ui.enabled=false",
                "--conf",
                "spark.ui.showConsoleProgress=false",
                "--conf",
                "spark.shuffle.readHostLocalDisk=false",
                "--conf",
                "spark.executor.extraClassPath=" + plugin,
                "--conf",
                "spark.shuffle.manager=io.memwire.shuffle.RdmaShuffleManager",
                "--conf",
                "spark.shuffle.rdma.provider=tcp",
                "--driver-class-path",
                plugin + ":" + recordsJar,
                "--jars",
                recordsJar.toString(),
                "--class",
                "io.memwire.mainjob.ShuffleApp",
                appJar.toString(),
                "--records",
                "4000",
                "--maps",
                "4",
                "--partitions",
                "4",
                "--small-repeats",
                "0",
                "--wait-executors",
                "2",
                "--out",
                result.toString()));
    // As a node's Spark environment would have them (spark-env.sh): the loopback address for the
    // local cluster, and the Scala line of this Spark runtime.
    run(
        work,
        cmd,
        Map.of(
            "SPARK_HOME",
            sparkHome.toString(),
            "SPARK_LOCAL_IP",
            "127.0.0.1",
            "SPARK_SCALA_VERSION",
            "2.13"),
        0);
    String json = Files.readString(result);
    assertTrue(json.contains("\"shuffleManager\":\"io.memwire.shuffle.RdmaShuffleManager\""), json);
    assertTrue(json.contains("\"managerCounters\":true"), json);
    assertTrue(!json.contains("\"oneSidedBytes\":0,"), "no byte was read one-sided: " + json);
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static void awaitReady(Process service, int port, Path log) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (!service.isAlive()) {
        fail("the service exited with " + service.exitValue() + ":\n" + Files.readString(log));
      }
      try {
        HttpURLConnection c = open(port, "/health/ready");
        if (c.getResponseCode() == 200) {
          return;
        }
      } catch (IOException notYet) {
        // not listening yet
      }
      service.waitFor(200, TimeUnit.MILLISECONDS); // returns early if it exits
    }
    fail("the service was not ready within 60 s:\n" + Files.readString(log));
  }

  private static HttpURLConnection open(int port, String path) throws IOException {
    HttpURLConnection c =
        (HttpURLConnection) URI.create("http://127.0.0.1:" + port + path).toURL().openConnection();
    c.setConnectTimeout(2000);
    c.setReadTimeout(5000);
    return c;
  }

  private static String get(int port, String path) throws IOException {
    HttpURLConnection c = open(port, path);
    assertEquals(200, c.getResponseCode(), path);
    try (var in = c.getInputStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** Runs a command to its end (at most {@link #TIMEOUT_S}); returns its output. */
  private String run(Path dir, List<String> cmd, Map<String, String> env, int expectedCode)
      throws Exception {
    Path out = Files.createTempFile(tmp, "cmd", ".out");
    ProcessBuilder pb =
        new ProcessBuilder(cmd)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(out.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("MEMWIRE_") || k.equals("SPARK_HOME"));
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().putAll(env);
    Process p = pb.start();
    if (!p.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      fail(
          String.join(" ", cmd)
              + " did not end within "
              + TIMEOUT_S
              + " s:\n"
              + Files.readString(out));
    }
    String text = Files.readString(out);
    assertEquals(expectedCode, p.exitValue(), String.join(" ", cmd) + ":\n" + text);
    return text;
  }
}
