package io.memwire.shuffle.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.TransferNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * The launcher in a child JVM, on the classpath bin/memwire gives it: with the Prometheus jars of
 * target/service-lib/ the ready line names the HTTP endpoint, which answers; without them a set
 * port fails the start naming the key (the service's classes load without the client).
 */
class ServiceLauncherTest {
  @TempDir Path root;

  private static String jarOf(Class<?> c) throws Exception {
    return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
  }

  private List<String> command(boolean withPrometheus) throws Exception {
    List<String> cp = new ArrayList<>();
    cp.add(jarOf(ServiceLauncher.class));
    cp.add(jarOf(TransferNode.class));
    cp.add(jarOf(LoggerFactory.class));
    cp.add(jarOf(Class.forName("org.slf4j.simple.SimpleLogger")));
    if (withPrometheus) {
      cp.add(Path.of("target", "service-lib").toAbsolutePath() + File.separator + "*");
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--add-exports=java.base/sun.nio.ch=ALL-UNNAMED");
    cmd.add("-cp");
    cmd.add(String.join(File.pathSeparator, cp));
    cmd.add(ServiceLauncher.class.getName());
    for (String kv :
        List.of(
            "socket=" + root.resolve("s/service.sock"),
            "dir=" + root.resolve("outputs"),
            "transfer.provider=tcp",
            "transfer.bindAddress=127.0.0.1",
            "http.host=127.0.0.1",
            "http.port=0")) {
      cmd.add("--conf");
      cmd.add(ServiceConfig.PREFIX + kv);
    }
    return cmd;
  }

  /** Every line the child prints (stdout and stderr merged), as it prints them. */
  private static BlockingQueue<String> follow(Process p) {
    BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    Thread t =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                  lines.add(line);
                }
              } catch (IOException ignored) {
                // the child is gone
              }
            },
            "launcher-test-output");
    t.setDaemon(true);
    t.start();
    return lines;
  }

  @Test
  void theReadyLineNamesTheEndpointWhichAnswersUntilSigterm() throws Exception {
    Process p = new ProcessBuilder(command(true)).redirectErrorStream(true).start();
    try {
      BlockingQueue<String> lines = follow(p);
      List<String> seen = new ArrayList<>();
      Matcher ready = null;
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      while (ready == null && System.nanoTime() < end) {
        String line = lines.poll(1, TimeUnit.SECONDS);
        if (line != null) {
          seen.add(line);
          Matcher m =
              Pattern.compile("memwire shuffle service ready: .* http=127\\.0\\.0\\.1:(\\d+)$")
                  .matcher(line);
          ready = m.find() ? m : null;
        }
      }
      assertTrue(ready != null, "no ready line with http=...: " + seen);
      int port = Integer.parseInt(ready.group(1));
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/ready"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), r.body());
      HttpResponse<String> m =
          http.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
              HttpResponse.BodyHandlers.ofString());
      assertTrue(m.body().contains("memwire_shuffle_service_ready 1"), m.body());
      p.destroy(); // SIGTERM: the shutdown hook closes the service, daemons do not hold the JVM
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the launcher exits on SIGTERM");
    } finally {
      p.destroyForcibly();
    }
  }

  @Test
  void withoutThePrometheusJarsASetPortFailsNamingTheKey() throws Exception {
    Process p = new ProcessBuilder(command(false)).redirectErrorStream(true).start();
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      assertEquals(2, p.exitValue(), out);
      assertTrue(out.contains(ServiceConfig.PREFIX + "http.port"), out);
      assertTrue(out.contains("Prometheus"), out);
    } finally {
      p.destroyForcibly();
    }
  }
}
