package io.memwire.shuffle.service;

import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.Unit;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The service's HTTP endpoint, HTTP/1.x on a {@link RequestLoop}: {@code /metrics} in the
 * Prometheus text format (every {@link ServiceMetrics} metric, read from {@link
 * ShuffleService#stats()} at each scrape and written by the Prometheus Java client's {@link
 * PrometheusTextFormatWriter}), {@code /health} (liveness: 200 while the service serves its socket)
 * and {@code /health/ready} (readiness: 200 only while it accepts outputs, 503 while starting or
 * stopping). GET and HEAD only; one request per connection ({@code Connection: close}); a request
 * head must fit in {@link #MAX_HEAD} bytes and arrive within {@link #TIMEOUT}. Its thread is a
 * daemon, {@code memwire-shuffle-service-http}; {@link #close} stops it and frees the port.
 */
final class ServiceHttp implements AutoCloseable, RequestLoop.Protocol {
  /** Most bytes of a request line and headers. */
  static final int MAX_HEAD = 8192;

  /** Time for a request head to arrive, and again for the response to be taken. */
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  private static final Logger LOG = LoggerFactory.getLogger(ServiceHttp.class);
  private static final String TEXT = "text/plain; charset=utf-8";

  private final ShuffleService service;
  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final PrometheusTextFormatWriter format = PrometheusTextFormatWriter.create();
  private RequestLoop loop;
  private boolean failureLogged;

  private ServiceHttp(ShuffleService service) {
    this.service = service;
    for (ServiceMetrics.Metric m : ServiceMetrics.ALL) {
      register(registry, service, m);
    }
    FabricMetrics.register(registry, io.memwire.transfer.fabric.NicCounters.system());
  }

  /**
   * Starts the endpoint on {@code host:port} (0: a free port) for {@code service}.
   *
   * @throws IOException when the port cannot be bound
   */
  static ServiceHttp start(ShuffleService service, String host, int port) throws IOException {
    ServiceHttp http = new ServiceHttp(service);
    try {
      http.loop =
          RequestLoop.start(
              "memwire-shuffle-service-http",
              new InetSocketAddress(host, port),
              MAX_HEAD,
              TIMEOUT,
              http);
    } catch (IOException e) {
      throw new IOException(
          "cannot serve HTTP on "
              + host
              + ":"
              + port
              + " ("
              + ServiceSettings.PREFIX
              + ServiceSettings.HTTP_PORT.name()
              + "): "
              + e.getMessage(),
          e);
    }
    return http;
  }

  private static void register(
      PrometheusRegistry registry, ShuffleService service, ServiceMetrics.Metric m) {
    Unit unit = m.unit() == null ? null : m.unit().equals("bytes") ? Unit.BYTES : Unit.SECONDS;
    String[] labels = m.label() == null ? new String[0] : new String[] {m.label()};
    if (m.kind() == io.memwire.transfer.metrics.Metric.Kind.GAUGE) {
      GaugeWithCallback.Builder b =
          GaugeWithCallback.builder()
              .name(m.clientName())
              .help(m.help())
              .labelNames(labels)
              .callback(cb -> values(service, m).forEach((l, v) -> call(cb::call, l, v)));
      if (unit != null) {
        b.unit(unit);
      }
      b.register(registry);
    } else {
      CounterWithCallback.Builder b =
          CounterWithCallback.builder()
              .name(m.clientName())
              .help(m.help())
              .labelNames(labels)
              .callback(cb -> values(service, m).forEach((l, v) -> call(cb::call, l, v)));
      if (unit != null) {
        b.unit(unit);
      }
      b.register(registry);
    }
  }

  /** Either client's callback. */
  @FunctionalInterface
  private interface Sink {
    void call(double value, String... labelValues);
  }

  private static void call(Sink sink, String label, double value) {
    if (label.isEmpty()) {
      sink.call(value);
    } else {
      sink.call(value, label);
    }
  }

  private static Map<String, Double> values(ShuffleService service, ServiceMetrics.Metric m) {
    return m.values(service.stats());
  }

  /** Index after the blank line that ends the request head, or -1 while it is incomplete. */
  @Override
  public int requestLength(ByteBuffer in) {
    int n = in.position();
    for (int i = 0; i < n; i++) {
      if (in.get(i) != '\n') {
        continue;
      }
      if (i + 1 < n && in.get(i + 1) == '\n') {
        return i + 2;
      }
      if (i + 2 < n && in.get(i + 1) == '\r' && in.get(i + 2) == '\n') {
        return i + 3;
      }
    }
    return -1;
  }

  @Override
  public ByteBuffer answer(ByteBuffer in, int length) {
    byte[] bytes = new byte[length];
    in.get(0, bytes);
    String head = new String(bytes, StandardCharsets.ISO_8859_1);
    String[] parts = head.substring(0, head.indexOf('\n')).strip().split(" ", -1);
    if (parts.length != 3 || !parts[2].startsWith("HTTP/1.") || !parts[1].startsWith("/")) {
      return response(400, TEXT, text("bad request line"), false);
    }
    if (!parts[0].equals("GET") && !parts[0].equals("HEAD")) {
      return response(405, TEXT, text("only GET and HEAD"), false);
    }
    int query = parts[1].indexOf('?');
    String path = query < 0 ? parts[1] : parts[1].substring(0, query);
    boolean headOnly = parts[0].equals("HEAD");
    try {
      return route(path, headOnly);
    } catch (IOException | RuntimeException e) {
      if (!failureLogged) {
        failureLogged = true;
        LOG.warn("the HTTP endpoint failed to answer {} (further failures at DEBUG)", path, e);
      } else {
        LOG.debug("the HTTP endpoint failed to answer {}", path, e);
      }
      return response(500, TEXT, text("internal error"), false);
    }
  }

  @Override
  public ByteBuffer tooLarge() {
    return response(431, TEXT, text("request head too large"), false);
  }

  /** {@code /metrics}, {@code /health} and {@code /health/ready}; every other path is 404. */
  private ByteBuffer route(String path, boolean headOnly) throws IOException {
    switch (path) {
      case "/metrics":
        ByteArrayOutputStream body = new ByteArrayOutputStream(16 << 10);
        format.write(body, registry.scrape());
        return response(200, format.getContentType(), body.toByteArray(), headOnly);
      case "/health":
      case "/health/live":
        boolean live = service.isLive();
        return response(
            live ? 200 : 503,
            TEXT,
            text(live ? "live" : "not live: the accept thread has stopped"),
            headOnly);
      case "/health/ready":
        ShuffleService.State state = service.state();
        return response(
            state == ShuffleService.State.READY ? 200 : 503,
            TEXT,
            text(
                switch (state) {
                  case READY -> "ready";
                  case STARTING -> "not ready: starting";
                  case RECOVERING -> "not ready: recovering";
                  case CLOSING, CLOSED -> "not ready: stopping";
                }),
            headOnly);
      default:
        return response(404, TEXT, text("not found: /metrics, /health, /health/ready"), headOnly);
    }
  }

  /** The status line, headers and (unless {@code headOnly}) body of one response. */
  private static ByteBuffer response(int status, String type, byte[] body, boolean headOnly) {
    byte[] head =
        ("HTTP/1.1 "
                + status
                + " "
                + reason(status)
                + "\r\nContent-Type: "
                + type
                + "\r\nContent-Length: "
                + body.length
                + (status == 405 ? "\r\nAllow: GET, HEAD" : "")
                + "\r\nConnection: close\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1);
    ByteBuffer out = ByteBuffer.allocate(head.length + (headOnly ? 0 : body.length)).put(head);
    if (!headOnly) {
      out.put(body);
    }
    return out.flip();
  }

  private static String reason(int status) {
    switch (status) {
      case 200:
        return "OK";
      case 400:
        return "Bad Request";
      case 404:
        return "Not Found";
      case 405:
        return "Method Not Allowed";
      case 431:
        return "Request Header Fields Too Large";
      case 503:
        return "Service Unavailable";
      default:
        return "Internal Server Error";
    }
  }

  private static byte[] text(String s) {
    return (s + "\n").getBytes(StandardCharsets.UTF_8);
  }

  /** The bound port. */
  int port() {
    return loop.port();
  }

  /** Stops serving (its thread joined) and frees the port. */
  @Override
  public void close() throws InterruptedException {
    loop.close();
  }
}
