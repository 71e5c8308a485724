package io.memwire.shuffle.service;

import static io.memwire.shuffle.service.ServiceFixture.await;
import static io.memwire.shuffle.service.ServiceFixture.client;
import static io.memwire.shuffle.service.ServiceFixture.readPartition;
import static io.memwire.shuffle.service.ServiceFixture.token;
import static io.memwire.shuffle.service.ServiceFixture.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The HTTP endpoint over real sockets on 127.0.0.1: /metrics scraped while executors hand outputs
 * over and a reducer reads them, /health and /health/ready through start and stop, and the endpoint
 * off unless its port is set.
 */
class ServiceHttpTest {
  /** One sample line of the Prometheus text format: name, optional labels, value. */
  private static final Pattern SAMPLE =
      Pattern.compile(
          "([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\]|\\\\.)*\",?)*\\})?"
              + " (-?[0-9.eE+-]+|NaN|[+-]Inf)( -?[0-9]+)?");

  private static final Pattern COMMENT = Pattern.compile("# (HELP|TYPE|UNIT) [a-zA-Z_:][\\w:]* .*");

  @TempDir Path root;
  private ServerSocket driver;
  private TransferNode reader;
  private ShuffleService service;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @BeforeEach
  void start() throws IOException {
    driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    reader = ServiceFixture.reader();
  }

  @AfterEach
  void stop() throws Exception {
    if (service != null) {
      service.close();
    }
    driver.close();
    reader.close();
    await(Duration.ofSeconds(10), () -> httpThreads().isEmpty(), "HTTP threads ended");
  }

  private ShuffleService startService(String... extra) throws IOException {
    service = ShuffleService.start(ServiceConfig.fromProperties(ServiceFixture.conf(root, extra)));
    return service;
  }

  private ShuffleService startWithHttp() throws IOException {
    return startService(
        ServiceSettings.PREFIX + "http.port",
        "0",
        ServiceSettings.PREFIX + "http.host",
        "127.0.0.1",
        ServiceSettings.PREFIX + "appTimeout",
        "2s");
  }

  private HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static List<String> httpThreads() {
    List<String> names = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive()
          && (t.getName().startsWith("memwire-shuffle-service-http")
              || t.getName().equals("HTTP-Dispatcher"))) {
        names.add(t.getName() + (t.isDaemon() ? "" : " (not a daemon)"));
      }
    }
    return names;
  }

  /**
   * Parses a scrape, failing unless every line is a comment or {@code name{labels} value}; returns
   * the samples keyed by name and labels as written.
   */
  static Map<String, Double> parse(String text) {
    Map<String, Double> samples = new HashMap<>();
    for (String line : text.split("\n")) {
      if (line.isEmpty() || line.startsWith("#")) {
        assertTrue(line.isEmpty() || COMMENT.matcher(line).matches(), "comment: " + line);
        continue;
      }
      Matcher m = SAMPLE.matcher(line);
      assertTrue(m.matches(), "not a Prometheus sample line: " + line);
      String key = m.group(1) + (m.group(2) == null ? "" : m.group(2));
      samples.put(key, Double.parseDouble(m.group(3).replace("+Inf", "Infinity")));
    }
    return samples;
  }

  private Map<String, Double> scrape() throws Exception {
    HttpResponse<String> r = get(service.httpPort(), "/metrics");
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(
        r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"),
        r.headers().toString());
    return parse(r.body());
  }

  private static double value(Map<String, Double> samples, String name) {
    Double v = samples.get(name);
    if (v == null) {
      throw new AssertionError(name + " not scraped; got " + new TreeSet<>(samples.keySet()));
    }
    return v;
  }

  @Test
  void metricsMoveWhileExecutorsPublishAndAReducerReads() throws Exception {
    startWithHttp();
    Map<String, Double> before = scrape();
    // Every declared metric is there, under its declared name.
    for (ServiceMetrics.Metric m : ServiceMetrics.ALL) {
      if (m.label() == null) {
        value(before, m.exposedName());
      }
    }
    assertEquals(1.0, value(before, "memwire_shuffle_service_ready"));
    assertEquals(0.0, value(before, "memwire_shuffle_service_outputs_held"));
    assertEquals(
        service.node().config().registrationBudget(),
        value(before, "memwire_shuffle_service_registration_budget_bytes"));
    assertEquals(
        0.0, value(before, "memwire_shuffle_service_refusals_total{reason=\"badOutput\"}"));

    Path execDir = root.resolve("exec-1");
    ServiceFixture.Output a = write(execDir, 3, 11, 7, 1);
    ServiceFixture.Output b = write(execDir, 3, 12, 7, 2);
    long bytes =
        Files.size(a.index()) + Files.size(a.data()) + Files.size(b.index()) + Files.size(b.data());
    DirectoryPointer p;
    try (ServiceClient c =
        client(service.socket(), "app-1", "1", token(1), driver.getLocalPort())) {
      p = c.publish(3, 0, 11, a.index(), a.data());
      c.publish(3, 1, 12, b.index(), b.data());
      // An index that does not describe its data file: refused, counted by reason.
      ServiceFixture.Output bad = write(execDir, 3, 13, 4, 3);
      Files.write(bad.data(), new byte[] {1, 2, 3});
      assertThrows(IOException.class, () -> c.publish(3, 2, 13, bad.index(), bad.data()));
      Map<String, Double> during = scrape();
      assertEquals(1.0, value(during, "memwire_shuffle_service_applications"));
      assertEquals(1.0, value(during, "memwire_shuffle_service_clients"));
    }
    int read = 0;
    for (int part = 0; part < 7; part++) {
      byte[] got = readPartition(reader, p, 0, part);
      assertArrayEquals(a.partitions()[part], got);
      read += got.length;
    }
    Map<String, Double> after = scrape();
    assertEquals(2.0, value(after, "memwire_shuffle_service_outputs_held"));
    assertEquals(bytes, value(after, "memwire_shuffle_service_outputs_held_bytes"));
    assertEquals(
        2.0,
        value(after, "memwire_shuffle_service_outputs_taken_total")
            - value(before, "memwire_shuffle_service_outputs_taken_total"));
    assertEquals(1.0, value(after, "memwire_shuffle_service_outputs_refused_total"));
    assertEquals(1.0, value(after, "memwire_shuffle_service_refusals_total{reason=\"badOutput\"}"));
    assertTrue(
        value(after, "memwire_shuffle_service_registered_bytes")
            > value(before, "memwire_shuffle_service_registered_bytes"),
        "registered bytes grew");
    assertTrue(value(after, "memwire_shuffle_service_directory_bytes") > 0);
    // Slot, index entries and data of each partition: at least 7 reads and every data byte.
    assertTrue(
        value(after, "memwire_shuffle_service_served_reads_total")
                - value(before, "memwire_shuffle_service_served_reads_total")
            >= 7,
        "served reads moved");
    assertTrue(
        value(after, "memwire_shuffle_service_served_bytes_total")
                - value(before, "memwire_shuffle_service_served_bytes_total")
            >= read,
        "served bytes moved by at least the partitions' bytes");
    assertTrue(value(after, "memwire_shuffle_service_transfer_connections") >= 1);
    assertTrue(value(after, "memwire_shuffle_service_cleanup_lag_seconds") >= 0);
    // The driver stops answering: its application ends, its outputs go, and the scrape says so.
    driver.close();
    await(Duration.ofSeconds(20), () -> service.stats().get("applications") == 0, "app ended");
    Map<String, Double> ended = scrape();
    assertEquals(0.0, value(ended, "memwire_shuffle_service_outputs_held"));
    assertEquals(0.0, value(ended, "memwire_shuffle_service_outputs_held_bytes"));
    assertEquals(1.0, value(ended, "memwire_shuffle_service_applications_ended_total"));
    assertEquals(0.0, value(ended, "memwire_shuffle_service_cleanup_lag_seconds"));
  }

  @Test
  void healthIsReadyAfterStartAndUnreadyOnceCloseBegins() throws Exception {
    startWithHttp();
    int port = service.httpPort();
    assertTrue(port > 0);
    assertEquals(200, get(port, "/health").statusCode());
    HttpResponse<String> ready = get(port, "/health/ready");
    assertEquals(200, ready.statusCode());
    assertEquals("ready\n", ready.body());
    assertEquals(404, get(port, "/nothing").statusCode());
    for (String t : httpThreads()) {
      assertFalse(t.endsWith("(not a daemon)"), t);
    }
    assertFalse(httpThreads().isEmpty());

    List<String> whileClosing = new ArrayList<>();
    service.whileClosing =
        () -> {
          try {
            HttpResponse<String> r = get(port, "/health/ready");
            whileClosing.add(r.statusCode() + " " + r.body().trim());
            whileClosing.add(get(port, "/health").statusCode() + "");
            Map<String, Double> m = parse(get(port, "/metrics").body());
            whileClosing.add("ready=" + value(m, "memwire_shuffle_service_ready"));
          } catch (IOException | InterruptedException e) {
            whileClosing.add(e.toString());
          }
        };
    service.close();
    assertEquals(List.of("503 not ready: stopping", "200", "ready=0.0"), whileClosing);
    // Closed: the port refuses, the threads are gone, the port can be bound again.
    assertThrows(ConnectException.class, () -> get(port, "/health"));
    await(Duration.ofSeconds(10), () -> httpThreads().isEmpty(), "HTTP threads ended");
    try (ServerSocket again = new ServerSocket()) {
      again.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    }
  }

  /**
   * Anyone who reaches the port can connect: clients that send half a request line, or nothing,
   * must not keep /health from answering (a liveness probe that times out gets the service
   * restarted). Twice the connection cap of them are open while the probe is answered; each is
   * closed once its time to send a request has passed; bad requests get their status.
   */
  @Test
  void slowAndSilentClientsDoNotKeepTheProbesOut() throws Exception {
    startWithHttp();
    int port = service.httpPort();
    List<java.net.Socket> slow = new ArrayList<>();
    try {
      for (int i = 0; i < 2 * RequestLoop.MAX_CONNECTIONS; i++) {
        java.net.Socket s = new java.net.Socket(InetAddress.getLoopbackAddress(), port);
        if (i % 2 == 0) {
          s.getOutputStream().write("GET /hea".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        slow.add(s);
      }
      HttpResponse<String> health = get(port, "/health");
      assertEquals(200, health.statusCode());
      assertEquals("live\n", health.body());
      assertEquals(200, get(port, "/metrics").statusCode());
      // The last one opened is still waiting for its request; past the timeout it is closed.
      java.net.Socket last = slow.get(slow.size() - 1);
      last.setSoTimeout((int) (3 * ServiceHttp.TIMEOUT.toMillis()));
      assertEquals(-1, last.getInputStream().read(), "closed without an answer");
    } finally {
      for (java.net.Socket s : slow) {
        s.close();
      }
    }
    assertEquals("HTTP/1.1 405 Method Not Allowed", rawStatus(port, "POST /health HTTP/1.1"));
    assertEquals("HTTP/1.1 400 Bad Request", rawStatus(port, "GARBAGE"));
    assertEquals(
        "HTTP/1.1 431 Request Header Fields Too Large",
        rawStatus(port, "GET /health HTTP/1.1\r\nX: " + "x".repeat(ServiceHttp.MAX_HEAD)));
    HttpResponse<String> head =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/ready"))
                .method("HEAD", HttpRequest.BodyPublishers.noBody())
                .timeout(Duration.ofSeconds(10))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, head.statusCode());
    assertEquals("", head.body());
    assertEquals("6", head.headers().firstValue("Content-Length").orElse(""), "the GET's length");
  }

  /** Sends {@code head} (and a blank line) on a raw socket; returns the status line. */
  private static String rawStatus(int port, String head) throws IOException {
    try (java.net.Socket s = new java.net.Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(10_000);
      s.getOutputStream()
          .write((head + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
      return new java.io.BufferedReader(
              new java.io.InputStreamReader(
                  s.getInputStream(), java.nio.charset.StandardCharsets.UTF_8))
          .readLine();
    }
  }

  @Test
  void theEndpointIsOffUnlessItsPortIsSet() throws Exception {
    startService();
    assertEquals(-1, service.httpPort());
    assertTrue(httpThreads().isEmpty(), httpThreads().toString());
  }

  @Test
  void aPortInUseFailsTheStartNamingTheKey() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      IOException e =
          assertThrows(
              IOException.class,
              () ->
                  startService(
                      ServiceSettings.PREFIX + "http.port",
                      String.valueOf(taken.getLocalPort()),
                      ServiceSettings.PREFIX + "http.host",
                      "127.0.0.1"));
      assertTrue(e.getMessage().contains(ServiceSettings.PREFIX + "http.port"), e.getMessage());
    }
    // The half-started service was closed: its socket is gone, another one starts.
    assertFalse(Files.exists(root.resolve("s/service.sock")));
    startService();
  }

  @Test
  void docsShowTheGeneratedMetricsTable() throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "SHUFFLE-SERVICE.md"));
    assertTrue(
        doc.contains(ServiceMetrics.markdownTable()),
        "regenerate the metrics table in docs/SHUFFLE-SERVICE.md:\n"
            + ServiceMetrics.markdownTable());
    assertTrue(
        doc.contains(ServiceStats.markdownTable()),
        "regenerate the stats table in docs/SHUFFLE-SERVICE.md:\n" + ServiceStats.markdownTable());
    Set<String> names = new TreeSet<>();
    for (ServiceMetrics.Metric m : ServiceMetrics.ALL) {
      assertTrue(names.add(m.exposedName()), "declared twice: " + m.exposedName());
    }
  }
}
