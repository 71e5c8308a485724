package io.memwire.shuffle.service;

import io.memwire.transfer.metrics.TransportMetrics;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The metrics the shuffle service exports on {@code /metrics}: each is one declared statistic
 * ({@link ServiceStats}, or a {@link TransportMetrics} one of its transfer node) under its
 * Prometheus name, its kind, unit and help taken from the declaration, and its value read from
 * {@link ShuffleService#stats()} at scrape time under the declaration's own key (nothing is counted
 * twice, no key is spelled twice). {@link ServiceHttp} registers them with the Prometheus client;
 * {@link #markdownTable()} is the table docs/SHUFFLE-SERVICE.md shows. No Prometheus class is used
 * here, so the service runs without the client when its endpoint is off.
 */
public final class ServiceMetrics {
  private ServiceMetrics() {}

  /** Prefix of every metric name. */
  public static final String NAMESPACE = "memwire_shuffle_service_";

  /**
   * One exported metric.
   *
   * @param name the name without {@link #NAMESPACE} and, for counters, without {@code _total}; ends
   *     with the unit when there is one
   * @param stat the declared statistic it shows: its kind, unit and (unless {@code help} is given)
   *     doc; a family ({@code refusals.<reason>}) is exported with one label
   * @param key the statistic's key in {@link ShuffleService#stats()} (a family: its members'
   *     prefix)
   * @param help what it measures (the exposition's HELP line and the docs)
   */
  public record Metric(
      String name, io.memwire.transfer.metrics.Metric stat, String key, String help) {

    /** Gauge or counter, as declared. */
    public io.memwire.transfer.metrics.Metric.Kind kind() {
      return stat.kind();
    }

    /** {@code bytes}, {@code seconds} (a duration, declared in µs) or null. */
    public String unit() {
      return switch (stat.unit()) {
        case BYTES -> "bytes";
        case MICROSECONDS -> "seconds";
        case COUNT, FLAG -> null;
      };
    }

    /** The one label's name ({@code reason} for a family), or null. */
    public String label() {
      return stat.isFamily() ? "reason" : null;
    }

    /** The full name as scraped ({@code memwire_shuffle_service_..._total} for counters). */
    public String exposedName() {
      return NAMESPACE
          + name
          + (kind() == io.memwire.transfer.metrics.Metric.Kind.COUNTER ? "_total" : "");
    }

    /** The name given to the Prometheus client (without {@code _total}). */
    public String clientName() {
      return NAMESPACE + name;
    }

    /**
     * Its values in a {@link ShuffleService#stats()} map: one entry, keyed by the empty string,
     * without a label; one per label value with it; none when the map lacks the statistic (a
     * provider's own counter on a node of another provider).
     */
    public Map<String, Double> values(Map<String, Long> stats) {
      double scale = stat.unit() == io.memwire.transfer.metrics.Metric.Unit.MICROSECONDS ? 1e-6 : 1;
      if (!stat.isFamily()) {
        Long v = stats.get(key);
        // A node statistic its provider does not keep (served reads over verbs or ucx, where the
        // serving CPU does nothing) has no sample: a false 0 would read as "nothing served".
        return v == null ? Map.of() : Map.of("", v * scale);
      }
      Map<String, Double> m = new LinkedHashMap<>();
      stats.forEach(
          (k, v) -> {
            if (k.startsWith(key)) {
              m.put(k.substring(key.length()), v * scale);
            }
          });
      return m;
    }
  }

  /** The service's own statistic {@code stat} exported as {@code name}. */
  private static Metric of(String name, io.memwire.transfer.metrics.Metric stat) {
    String key = stat.isFamily() ? stat.name().substring(0, stat.name().indexOf('<')) : stat.name();
    return new Metric(name, stat, key, stat.doc());
  }

  /** A statistic of the service's transfer node ({@code node.*}), with the service's own help. */
  private static Metric node(
      String name, io.memwire.transfer.metrics.Metric transport, String help) {
    return new Metric(name, transport, ShuffleService.NODE_PREFIX + transport.name(), help);
  }

  /** Every exported metric, in documentation order. */
  public static final List<Metric> ALL =
      List.of(
          of("ready", ServiceStats.READY),
          of("applications", ServiceStats.APPLICATIONS),
          of("clients", ServiceStats.CLIENTS),
          of("outputs_held", ServiceStats.OUTPUTS_HELD),
          of("outputs_held_bytes", ServiceStats.BYTES_HELD),
          of("outputs_limit", ServiceStats.MAX_OUTPUTS),
          node(
              "registered_bytes",
              TransportMetrics.REGISTERED_BYTES,
              "Bytes the service's transfer node has registered (held outputs' file regions, "
                  + "shuffle directories, read pool), counted against its registration budget."),
          of("registration_budget_bytes", ServiceStats.REGISTRATION_BUDGET),
          of("directory_bytes", ServiceStats.DIRECTORY_BYTES),
          of("transfer_connections", ServiceStats.TRANSFER_CONNECTIONS),
          of("cleanup_lag_seconds", ServiceStats.CLEANUP_LAG),
          of("recovering", ServiceStats.RECOVERING),
          of("outputs_taken", ServiceStats.OUTPUTS_TAKEN),
          of("outputs_with_checksums", ServiceStats.OUTPUTS_WITH_CHECKSUMS),
          of("outputs_recovered", ServiceStats.OUTPUTS_RECOVERED),
          of("recovery_dropped", ServiceStats.RECOVERY_DROPPED),
          of("recovery_store_lost", ServiceStats.RECOVERY_STORE_LOST),
          of("pointers_resolved", ServiceStats.POINTERS_RESOLVED),
          of("pointer_resolves_refused", ServiceStats.POINTER_RESOLVES_REFUSED),
          of("outputs_refused", ServiceStats.OUTPUTS_REFUSED),
          of("outputs_replaced", ServiceStats.OUTPUTS_REPLACED),
          of("refusals", ServiceStats.REFUSALS),
          of("clients_refused", ServiceStats.CLIENTS_REFUSED),
          of("clients_timed_out", ServiceStats.CLIENTS_TIMED_OUT),
          of("applications_ended", ServiceStats.APPLICATIONS_ENDED),
          of("shuffles_removed", ServiceStats.SHUFFLES_REMOVED),
          of("driver_probes", ServiceStats.DRIVER_PROBES),
          node(
              "served_reads",
              TransportMetrics.SERVED_READS,
              "Reads the transfer node served to reducers over tcp; no sample over verbs or ucx, "
                  + "whose reads bypass the serving CPU."),
          node(
              "served_bytes",
              TransportMetrics.SERVED_BYTES,
              "Bytes the transfer node served to reducers over tcp; no sample over verbs or ucx."),
          node(
              "served_errors",
              TransportMetrics.SERVED_ERRORS,
              "Reads the transfer node refused over tcp (unknown region key, out of bounds); no "
                  + "sample over verbs or ucx, whose NIC refuses them (the reader counts them)."),
          node(
              "transfer_connections_refused",
              TransportMetrics.CONNECTIONS_REFUSED,
              "Reader connections the transfer node refused over tcp (over its connection caps); "
                  + "no sample over verbs or ucx."));

  /** The Markdown table of every metric (docs/SHUFFLE-SERVICE.md shows it). */
  public static String markdownTable() {
    StringBuilder b =
        new StringBuilder("| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n");
    for (Metric m : ALL) {
      b.append("| `")
          .append(m.exposedName())
          .append("` | ")
          .append(m.kind().text())
          .append(" | ")
          .append(m.label() == null ? "" : "`" + m.label() + "`")
          .append(" | ")
          .append(m.help())
          .append(" |\n");
    }
    return b.toString();
  }
}
