package io.memwire.shuffle.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher in a child JVM, on the classpath bin/memwire gives it: with the Prometheus jars of
 * target/service-lib/ the ready line names the HTTP endpoint, which answers; without them a set
 * port fails the start naming the key (the service's classes load without the client).
 */
class ServiceLauncherTest {
  @TempDir Path root;

  private List<String> command(boolean withPrometheus) throws Exception {
    return ServiceProcess.command(
        withPrometheus,
        List.of(
            "socket=" + root.resolve("s/service.sock"),
            "dir=" + root.resolve("outputs"),
            "transfer.provider=tcp",
            "transfer.bindAddress=127.0.0.1",
            "http.host=127.0.0.1",
            "http.port=0"));
  }

  @Test
  void theReadyLineNamesTheEndpointWhichAnswersUntilSigterm() throws Exception {
    Process p = new ProcessBuilder(command(true)).redirectErrorStream(true).start();
    try {
      Matcher ready =
          ServiceProcess.await(
              ServiceProcess.follow(p),
              "memwire shuffle service ready: .* http=127\\.0\\.0\\.1:(\\d+)$");
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
      assertTrue(out.contains(ServiceSettings.PREFIX + "http.port"), out);
      assertTrue(out.contains("Prometheus"), out);
    } finally {
      p.destroyForcibly();
    }
  }
}
