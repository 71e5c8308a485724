package io.memwire.flight.metrics;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.flight.FlightStatsMetrics;
import io.memwire.flight.RdmaFlightClient;
import io.memwire.flight.RdmaFlightProducer;
import io.memwire.transfer.TransferNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Registers Memwire's Flight counters in a Dropwizard {@link MetricRegistry} the application hands
 * in (the registry behind JMX, Prometheus, Graphite or CSV reporters): one gauge per counter of the
 * server ({@link RdmaFlightProducer#stats()}: sessions, batches copied and leased in place, body
 * bytes, leases freed, expired and released unfreed, refused exchanges, credit waits, leased and
 * registered bytes), of the client ({@link RdmaFlightClient#stats()}: streams one-sided and through
 * DoGet, batches and bytes, fallbacks per reason) and of a transfer node ({@link
 * TransferNode#stats()}: regions, connections, reads, transport errors by type, registered memory
 * per consumer).
 *
 * <pre>{@code
 * try (FlightMetrics.Registration r = FlightMetrics.register(registry, "memwire.flight.server",
 *     producer)) { ... }
 * }</pre>
 *
 * <p>A gauge reads a snapshot of all counters, taken at most once per {@code refreshMillis}
 * (default 1 s) whichever gauge a reporter reads first, so one report costs one snapshot. The
 * gauges are named {@code prefix.counter}; keys a later snapshot adds (for instance a node's
 * per-consumer memory) get no gauge. Closing the registration removes every gauge it added.
 * Reporter threads run the gauges; snapshots are thread-safe.
 */
public final class FlightMetrics {
  private static final long DEFAULT_REFRESH_MILLIS = 1000;

  private FlightMetrics() {}

  /** The gauges one call added; {@link #close()} removes them from the registry. */
  public static final class Registration implements AutoCloseable {
    private final MetricRegistry registry;
    private final List<String> names;

    private Registration(MetricRegistry registry, List<String> names) {
      this.registry = registry;
      this.names = names;
    }

    /** The gauge names registered, {@code prefix.counter}. */
    public List<String> names() {
      return List.copyOf(names);
    }

    @Override
    public void close() {
      names.forEach(registry::remove);
    }
  }

  /**
   * The server's counters, one gauge per {@link FlightStatsMetrics#SERVER} key, under {@code
   * prefix}.
   */
  public static Registration register(
      MetricRegistry registry, String prefix, RdmaFlightProducer producer) {
    Objects.requireNonNull(producer, "producer");
    return register(
        registry, prefix, producer::stats, FlightStatsMetrics.serverKeys(), DEFAULT_REFRESH_MILLIS);
  }

  /**
   * The client's counters (streams one-sided and through DoGet, batches and body bytes pulled,
   * bodies verified, fallbacks per reason), one gauge per {@link FlightStatsMetrics#CLIENT} key,
   * under {@code prefix}.
   */
  public static Registration register(
      MetricRegistry registry, String prefix, RdmaFlightClient client) {
    Objects.requireNonNull(client, "client");
    return register(
        registry, prefix, client::stats, FlightStatsMetrics.clientKeys(), DEFAULT_REFRESH_MILLIS);
  }

  /** A transfer node's counters (a Flight server's or client's node), under {@code prefix}. */
  public static Registration register(MetricRegistry registry, String prefix, TransferNode node) {
    Objects.requireNonNull(node, "node");
    return register(registry, prefix, () -> node.stats().asMap(), DEFAULT_REFRESH_MILLIS);
  }

  /**
   * One gauge per key of {@code counters}' first snapshot, under {@code prefix}; a snapshot is
   * reused for {@code refreshMillis}.
   *
   * @throws IllegalArgumentException when a gauge of that name exists already
   */
  public static Registration register(
      MetricRegistry registry,
      String prefix,
      Supplier<Map<String, Long>> counters,
      long refreshMillis) {
    Objects.requireNonNull(counters, "counters");
    Snapshots snapshots = new Snapshots(counters, refreshNanos(refreshMillis));
    return register(registry, prefix, snapshots, snapshots.get().keySet());
  }

  /**
   * One gauge per key of {@code keys} (declared names; a key a snapshot lacks reads 0), under
   * {@code prefix}; a snapshot is reused for {@code refreshMillis}.
   *
   * @throws IllegalArgumentException when a gauge of that name exists already
   */
  static Registration register(
      MetricRegistry registry,
      String prefix,
      Supplier<Map<String, Long>> counters,
      List<String> keys,
      long refreshMillis) {
    return register(registry, prefix, new Snapshots(counters, refreshNanos(refreshMillis)), keys);
  }

  private static long refreshNanos(long refreshMillis) {
    if (refreshMillis < 0) {
      throw new IllegalArgumentException("refreshMillis must be >= 0, got " + refreshMillis);
    }
    return refreshMillis * 1_000_000;
  }

  private static Registration register(
      MetricRegistry registry, String prefix, Snapshots snapshots, Iterable<String> keys) {
    Objects.requireNonNull(registry, "registry");
    if (prefix == null || prefix.isBlank()) {
      throw new IllegalArgumentException("prefix must not be empty");
    }
    List<String> names = new ArrayList<>();
    try {
      for (String key : keys) {
        String name = MetricRegistry.name(prefix, key);
        registry.register(name, (Gauge<Long>) () -> snapshots.get().getOrDefault(key, 0L));
        names.add(name);
      }
    } catch (IllegalArgumentException e) {
      names.forEach(registry::remove);
      throw e;
    }
    return new Registration(registry, names);
  }

  /** The latest snapshot, renewed when older than the refresh interval. */
  private static final class Snapshots {
    private final Supplier<Map<String, Long>> source;
    private final long refreshNanos;

    @GuardedBy("this")
    private Map<String, Long> last;

    @GuardedBy("this")
    private long takenAt;

    Snapshots(Supplier<Map<String, Long>> source, long refreshNanos) {
      this.source = source;
      this.refreshNanos = refreshNanos;
    }

    synchronized Map<String, Long> get() {
      long now = System.nanoTime();
      if (last == null || now - takenAt >= refreshNanos) {
        last = Map.copyOf(source.get());
        takenAt = now;
      }
      return last;
    }
  }
}
