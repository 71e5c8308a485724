package io.memwire.shuffle.service;

import com.sun.net.httpserver.HttpExchange;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.Unit;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The service's HTTP endpoint, on the Prometheus Java client's exporter ({@link HTTPServer}, the
 * JDK's {@code com.sun.net.httpserver}): {@code /metrics} in the Prometheus text format (every
 * {@link ServiceMetrics} metric, read from {@link ShuffleService#stats()} at each scrape), {@code
 * /health} (liveness: 200 while the service serves its socket) and {@code /health/ready}
 * (readiness: 200 only while it accepts outputs, 503 while starting or stopping). Its threads are
 * daemons: {@code memwire-shuffle-service-http-N} answer requests, the JDK's {@code
 * HTTP-Dispatcher} accepts connections; {@link #close} stops both and frees the port.
 */
final class ServiceHttp implements AutoCloseable {
  private static final AtomicInteger THREADS = new AtomicInteger();

  private final HTTPServer server;
  private final ExecutorService executor;

  private ServiceHttp(HTTPServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  /**
   * Starts the endpoint on {@code host:port} (0: a free port) for {@code service}.
   *
   * @throws IOException when the port cannot be bound
   */
  static ServiceHttp start(ShuffleService service, String host, int port) throws IOException {
    PrometheusRegistry registry = new PrometheusRegistry();
    for (ServiceMetrics.Metric m : ServiceMetrics.ALL) {
      register(registry, service, m);
    }
    ExecutorService executor =
        Executors.newFixedThreadPool(
            2,
            r -> {
              Thread t = new Thread(r, "memwire-shuffle-service-http-" + THREADS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    HTTPServer.Builder builder =
        HTTPServer.builder()
            .hostname(host)
            .port(port)
            .registry(registry)
            .executorService(executor)
            .registerHealthHandler(false)
            .defaultHandler(exchange -> health(service, exchange));
    // The JDK's dispatcher thread takes the daemon status of the thread that starts the server:
    // start it from a daemon thread, so the endpoint never keeps the JVM alive.
    AtomicReference<Object> result = new AtomicReference<>();
    Thread starter =
        new Thread(
            () -> {
              try {
                result.set(builder.buildAndStart());
              } catch (IOException | RuntimeException e) {
                result.set(e);
              }
            },
            "memwire-shuffle-service-http-start");
    starter.setDaemon(true);
    starter.start();
    try {
      starter.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      executor.shutdownNow();
      throw new IOException("interrupted while starting the HTTP endpoint", e);
    }
    Object r = result.get();
    if (r instanceof HTTPServer s) {
      return new ServiceHttp(s, executor);
    }
    executor.shutdownNow();
    if (r instanceof IOException e) {
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
    throw (RuntimeException) r;
  }

  private static void register(
      PrometheusRegistry registry, ShuffleService service, ServiceMetrics.Metric m) {
    Unit unit = m.unit() == null ? null : m.unit().equals("bytes") ? Unit.BYTES : Unit.SECONDS;
    String[] labels = m.label() == null ? new String[0] : new String[] {m.label()};
    if (m.kind() == ServiceMetrics.Kind.GAUGE) {
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
    return m.values().apply(service.stats());
  }

  /** {@code /health} and {@code /health/ready}; every other path but /metrics is 404. */
  private static void health(ShuffleService service, HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getPath();
      int code;
      String body;
      if (path.equals("/health") || path.equals("/health/live")) {
        boolean live = service.isLive();
        code = live ? 200 : 503;
        body = live ? "live\n" : "not live: the accept thread has stopped\n";
      } else if (path.equals("/health/ready")) {
        boolean ready = service.isReady();
        code = ready ? 200 : 503;
        body =
            ready
                ? "ready\n"
                : service.isClosed() ? "not ready: stopping\n" : "not ready: starting\n";
      } else {
        code = 404;
        body = "not found: /metrics, /health, /health/ready\n";
      }
      exchange.getRequestBody().readAllBytes();
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
      boolean head = exchange.getRequestMethod().equals("HEAD");
      exchange.sendResponseHeaders(code, head ? -1 : bytes.length);
      if (!head) {
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(bytes);
        }
      }
    }
  }

  /** The bound port. */
  int port() {
    return server.getPort();
  }

  /** Stops the server (its dispatcher thread joined), then its handler threads; frees the port. */
  @Override
  public void close() throws InterruptedException {
    server.close();
    executor.shutdown();
    if (!executor.awaitTermination(10, TimeUnit.SECONDS)) {
      executor.shutdownNow();
    }
  }
}
