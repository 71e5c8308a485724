package io.memwire.shuffle.service;

import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.Unit;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;

/**
 * The service's HTTP endpoint on an {@link HttpLoop}: {@code /metrics} in the Prometheus text
 * format (every {@link ServiceMetrics} metric, read from {@link ShuffleService#stats()} at each
 * scrape and written by the Prometheus Java client's {@link PrometheusTextFormatWriter}), {@code
 * /health} (liveness: 200 while the service serves its socket) and {@code /health/ready}
 * (readiness: 200 only while it accepts outputs, 503 while starting or stopping). Its one thread is
 * a daemon, {@code memwire-shuffle-service-http}; {@link #close} stops it and frees the port.
 */
final class ServiceHttp implements AutoCloseable {
  private static final String TEXT = "text/plain; charset=utf-8";

  private final HttpLoop loop;

  private ServiceHttp(HttpLoop loop) {
    this.loop = loop;
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
    PrometheusTextFormatWriter format = PrometheusTextFormatWriter.create();
    try {
      return new ServiceHttp(
          HttpLoop.start(host, port, r -> answer(service, registry, format, r.path())));
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

  /** {@code /metrics}, {@code /health} and {@code /health/ready}; every other path is 404. */
  private static HttpLoop.Response answer(
      ShuffleService service,
      PrometheusRegistry registry,
      PrometheusTextFormatWriter format,
      String path)
      throws IOException {
    switch (path) {
      case "/metrics":
        ByteArrayOutputStream body = new ByteArrayOutputStream(16 << 10);
        format.write(body, registry.scrape());
        return new HttpLoop.Response(200, format.getContentType(), body.toByteArray());
      case "/health":
      case "/health/live":
        boolean live = service.isLive();
        return new HttpLoop.Response(
            live ? 200 : 503,
            TEXT,
            HttpLoop.text(live ? "live" : "not live: the accept thread has stopped"));
      case "/health/ready":
        boolean ready = service.isReady();
        return new HttpLoop.Response(
            ready ? 200 : 503,
            TEXT,
            HttpLoop.text(
                ready
                    ? "ready"
                    : service.isClosed() ? "not ready: stopping" : "not ready: starting"));
      default:
        return new HttpLoop.Response(
            404, TEXT, HttpLoop.text("not found: /metrics, /health, /health/ready"));
    }
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
