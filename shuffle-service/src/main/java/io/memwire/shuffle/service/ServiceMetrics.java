package io.memwire.shuffle.service;

import io.memwire.transfer.metrics.TransportMetrics;
import io.memwire.transfer.settings.TransportSettings;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The metrics the shuffle service exports on {@code /metrics}, each declared once: its name, type,
 * unit, label and help text, and how its value is read from {@link ShuffleService#stats()} at
 * scrape time (nothing is counted twice). {@link ServiceHttp} registers them with the Prometheus
 * client; {@link #markdownTable()} is the table docs/SHUFFLE-SERVICE.md shows. No Prometheus class
 * is used here, so the service runs without the client when its endpoint is off.
 */
public final class ServiceMetrics {
  private ServiceMetrics() {}

  /** Prefix of every metric name. */
  public static final String NAMESPACE = "memwire_shuffle_service_";

  /** Prometheus metric types used. */
  public enum Kind {
    /** A value that goes up and down. */
    GAUGE,
    /** A count since the service started; exposed with the suffix {@code _total}. */
    COUNTER
  }

  /**
   * One exported metric.
   *
   * @param name the name without {@link #NAMESPACE} and, for counters, without {@code _total}; ends
   *     with the unit when there is one
   * @param kind gauge or counter
   * @param unit {@code bytes}, {@code seconds} or null
   * @param label the one label's name, or null
   * @param help what it measures (the exposition's HELP line and the docs)
   * @param values its values from a {@link ShuffleService#stats()} map: one entry, keyed by the
   *     empty string, without a label; one per label value with it
   */
  public record Metric(
      String name,
      Kind kind,
      String unit,
      String label,
      String help,
      Function<Map<String, Long>, Map<String, Double>> values) {

    /** The full name as scraped ({@code memwire_shuffle_service_..._total} for counters). */
    public String exposedName() {
      return NAMESPACE + name + (kind == Kind.COUNTER ? "_total" : "");
    }

    /** The name given to the Prometheus client (without {@code _total}). */
    public String clientName() {
      return NAMESPACE + name;
    }
  }

  private static Metric gauge(String name, String unit, String help, String stat) {
    return new Metric(name, Kind.GAUGE, unit, null, help, one(stat));
  }

  private static Metric counter(String name, String unit, String help, String stat) {
    return new Metric(name, Kind.COUNTER, unit, null, help, one(stat));
  }

  /** The key of a transport metric of the service's node in {@link ShuffleService#stats()}. */
  private static String node(io.memwire.transfer.metrics.Metric transport) {
    return ShuffleService.NODE_PREFIX + transport.name();
  }

  private static Function<Map<String, Long>, Map<String, Double>> one(String stat) {
    return m -> Map.of("", (double) m.getOrDefault(stat, 0L));
  }

  /** Every exported metric, in documentation order. */
  public static final List<Metric> ALL =
      List.of(
          gauge(
              "ready",
              null,
              "1 while the service accepts outputs (started, not stopping), else 0: what "
                  + "/health/ready answers.",
              "ready"),
          gauge(
              "applications",
              null,
              "Applications registered now (keyed by local user and application id).",
              "applications"),
          gauge(
              "clients", null, "Executor connections open on the service's socket now.", "clients"),
          gauge("outputs_held", null, "Map outputs held now.", "outputsHeld"),
          gauge(
              "outputs_held_bytes",
              "bytes",
              "Bytes of the map output files held now, at their full length (what the "
                  + "maxBytesPer* quotas count, with the directory chunks).",
              "bytesHeld"),
          gauge(
              "outputs_limit",
              null,
              "Most map outputs held at once: maxOutputs, lowered at start to what the open-file "
                  + "limit and vm.max_map_count leave room for.",
              "maxOutputs"),
          gauge(
              "registered_bytes",
              "bytes",
              "Bytes the service's transfer node has registered (held outputs' file regions, "
                  + "shuffle directories, read pool), counted against its registration budget.",
              node(TransportMetrics.REGISTERED_BYTES)),
          gauge(
              "registration_budget_bytes",
              "bytes",
              "The transfer node's registration budget ("
                  + ServiceSettings.TRANSFER_PREFIX
                  + TransportSettings.REGISTRATION_BUDGET.name()
                  + "): the most bytes it registers at once.",
              "registrationBudget"),
          gauge(
              "directory_bytes",
              "bytes",
              "Registered memory of the shuffle directories (the slots reducers read first), "
                  + "allocated in 256 KiB chunks, each charged to its application's and user's "
                  + "maxBytesPer* quotas.",
              "directoryBytes"),
          new Metric(
              "transfer_connections",
              Kind.GAUGE,
              null,
              null,
              "Reader connections the transfer node serves now (tcp: serving sessions; verbs: "
                  + "connected queue pairs).",
              m ->
                  Map.of(
                      "",
                      (double)
                          (m.getOrDefault(node(TransportMetrics.SERVING_SESSIONS), 0L)
                              + m.getOrDefault(node(TransportMetrics.VERBS_CONNECTIONS), 0L)))),
          new Metric(
              "cleanup_lag_seconds",
              Kind.GAUGE,
              "seconds",
              null,
              "Longest time any registered application has gone without its driver accepting a "
                  + "probe connection (since it registered, if none yet): how long an ended "
                  + "application's outputs have waited to be deleted. Up to appTimeout/4 (at most "
                  + "10 s) between probes of a live driver is normal; an application ends 5 s after "
                  + "its driver's port starts refusing (or appTimeout, if shorter) and appTimeout "
                  + "after its host went silent. 0 with no application.",
              m -> Map.of("", m.getOrDefault("cleanupLagMillis", 0L) / 1000.0)),
          gauge(
              "recovering",
              null,
              "1 while the service takes back the outputs a previous run recorded (before it is "
                  + "ready; recoveryPath set), else 0.",
              "recovering"),
          counter("outputs_taken", null, "Map outputs taken over and published.", "outputsTaken"),
          counter(
              "outputs_with_checksums",
              null,
              "Of those, outputs published with Spark's checksums inline, so reducers verify their "
                  + "blocks (the others are read unverified).",
              "outputsWithChecksums"),
          counter(
              "outputs_recovered",
              null,
              "Map outputs of a previous run taken back at start (files checked again, registered "
                  + "under new keys).",
              "outputsRecovered"),
          new Metric(
              "recovery_dropped",
              Kind.COUNTER,
              null,
              "reason",
              "Recorded map outputs not taken back at start, by reason: corrupt (a record that "
                  + "does not read), application (its application could not be: unknown user, "
                  + "driver host that does not resolve, over maxApplicationsPerUser), missing (a "
                  + "file is gone), changed (another inode, size, time, owner or kind, or an "
                  + "index that no longer fits its data), quota, registrationBudget. Their readers "
                  + "get fetch failures.",
              m -> labelled(m, "recoveryDropped.")),
          counter(
              "recovery_store_lost",
              null,
              "Starts whose recovery store was gone (while outputs remained) or could not be read: "
                  + "the service started empty.",
              "recoveryStoreLost"),
          counter(
              "pointers_resolved",
              null,
              "Readers' directory pointers from before a restart resolved to the chunk that "
                  + "replaced them (RESOLVE on resolvePort): those readers go on one-sided.",
              "pointersResolved"),
          counter(
              "pointer_resolves_refused",
              null,
              "RESOLVE requests refused: malformed, not authenticated with the pointer's "
                  + "application token, or naming a pointer no output was taken back under (the "
                  + "reader then gets a fetch failure).",
              "pointerResolvesRefused"),
          counter(
              "outputs_refused",
              null,
              "Map outputs refused, for any reason (their executor serves them itself).",
              "outputsRefused"),
          counter(
              "outputs_replaced",
              null,
              "Held outputs replaced by a republished map index (their files and quota released).",
              "outputsReplaced"),
          new Metric(
              "refusals",
              Kind.COUNTER,
              null,
              "reason",
              "Requests refused, by reason: the key of the quota that was hit (maxClients, "
                  + "maxClientsPerUser, maxClientsPerApplication, maxApplicationsPerUser, "
                  + "maxOutputs, maxOutputsPerUser, maxOutputsPerApplication, maxBytesPerUser, "
                  + "maxBytesPerApplication), userNotAllowed (not in allowedUsers), badOutput (a "
                  + "file the service would not take), registrationBudget (the transfer node's "
                  + "budget is full), stopping, registration (another token or driver address, or "
                  + "a driver host that does not resolve).",
              m -> labelled(m, "refusals.")),
          counter(
              "clients_refused",
              null,
              "Connections refused at accept (user not allowed, or a connection quota).",
              "clientsRefused"),
          counter(
              "clients_timed_out",
              null,
              "Connections closed past registerTimeout or frameTimeout.",
              "clientsTimedOut"),
          counter(
              "applications_ended",
              null,
              "Applications ended (driver gone, cluster manager, service stop); their outputs "
                  + "deleted.",
              "applicationsEnded"),
          counter(
              "shuffles_removed",
              null,
              "Shuffles removed on Spark's request (unregisterShuffle).",
              "shufflesRemoved"),
          counter("driver_probes", null, "Driver liveness probes made.", "driverProbes"),
          counter(
              "served_reads",
              null,
              "Reads the transfer node served to reducers over tcp (verbs reads bypass the CPU "
                  + "and are not counted).",
              node(TransportMetrics.SERVED_READS)),
          counter(
              "served_bytes",
              "bytes",
              "Bytes the transfer node served to reducers over tcp.",
              node(TransportMetrics.SERVED_BYTES)),
          counter(
              "served_errors",
              null,
              "Reads the transfer node refused over tcp (unknown region key, out of bounds).",
              node(TransportMetrics.SERVED_ERRORS)),
          counter(
              "transfer_connections_refused",
              null,
              "Reader connections the transfer node refused (over its connection caps).",
              node(TransportMetrics.CONNECTIONS_REFUSED)));

  /** The stats named {@code prefix + label value}, keyed by the label value. */
  private static Map<String, Double> labelled(Map<String, Long> stats, String prefix) {
    Map<String, Double> m = new LinkedHashMap<>();
    stats.forEach(
        (k, v) -> {
          if (k.startsWith(prefix)) {
            m.put(k.substring(prefix.length()), (double) v);
          }
        });
    return m;
  }

  /** The Markdown table of every metric (docs/SHUFFLE-SERVICE.md shows it). */
  public static String markdownTable() {
    StringBuilder b =
        new StringBuilder("| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n");
    for (Metric m : ALL) {
      b.append("| `")
          .append(m.exposedName())
          .append("` | ")
          .append(m.kind().name().toLowerCase(java.util.Locale.ROOT))
          .append(" | ")
          .append(m.label() == null ? "" : "`" + m.label() + "`")
          .append(" | ")
          .append(m.help())
          .append(" |\n");
    }
    return b.toString();
  }
}
