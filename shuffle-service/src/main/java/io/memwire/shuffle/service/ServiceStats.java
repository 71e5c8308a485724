package io.memwire.shuffle.service;

import static io.memwire.transfer.metrics.Metric.Unit.BYTES;
import static io.memwire.transfer.metrics.Metric.Unit.COUNT;
import static io.memwire.transfer.metrics.Metric.Unit.FLAG;
import static io.memwire.transfer.metrics.Metric.Unit.MICROSECONDS;
import static io.memwire.transfer.metrics.Metric.counter;
import static io.memwire.transfer.metrics.Metric.gauge;

import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.Metrics;
import io.memwire.transfer.settings.TransportSettings;
import java.util.List;

/**
 * The shuffle service's own statistics, each declared once as a {@link Metric} (name, kind, unit,
 * doc): the keys of {@link ShuffleService#stats()} besides its transfer node's ({@code node.*},
 * declared in {@link io.memwire.transfer.metrics.TransportMetrics}). {@link ServiceCounters} counts
 * the counters under these declarations, {@link ShuffleService#stats()} puts the gauges under them,
 * and {@link ServiceMetrics} exports each one on {@code /metrics} by referring to its constant.
 */
public final class ServiceStats {
  private ServiceStats() {}

  // What the service holds now.

  public static final Metric READY =
      gauge(
          "ready",
          FLAG,
          "1 while the service accepts outputs (started, not stopping), else 0: what "
              + "/health/ready answers.");
  public static final Metric APPLICATIONS =
      gauge(
          "applications",
          COUNT,
          "Applications registered now (keyed by local user and application id).");
  public static final Metric CLIENTS =
      gauge("clients", COUNT, "Executor connections open on the service's socket now.");
  public static final Metric OUTPUTS_HELD = gauge("outputsHeld", COUNT, "Map outputs held now.");
  public static final Metric BYTES_HELD =
      gauge(
          "bytesHeld",
          BYTES,
          "Bytes of the map output files held now, at their full length (what the maxBytesPer* "
              + "quotas count, with the directory chunks).");
  public static final Metric MAX_OUTPUTS =
      gauge(
          "maxOutputs",
          COUNT,
          "Most map outputs held at once: maxOutputs, lowered at start to what the open-file "
              + "limit and vm.max_map_count leave room for.");
  public static final Metric REGISTRATION_BUDGET =
      gauge(
          "registrationBudget",
          BYTES,
          "The transfer node's registration budget ("
              + ServiceSettings.TRANSFER_PREFIX
              + TransportSettings.REGISTRATION_BUDGET.name()
              + "): the most bytes it registers at once.");
  public static final Metric DIRECTORY_BYTES =
      gauge(
          "directoryBytes",
          BYTES,
          "Registered memory of the shuffle directories (the slots reducers read first), "
              + "allocated in 256 KiB chunks, each charged to its application's and user's "
              + "maxBytesPer* quotas.");
  public static final Metric TRANSFER_CONNECTIONS =
      gauge(
          "transferConnections",
          COUNT,
          "Reader connections the transfer node serves now (tcp: serving sessions; verbs: "
              + "connected queue pairs).");
  public static final Metric CLEANUP_LAG =
      gauge(
          "cleanupLagMicros",
          MICROSECONDS,
          "Longest time any registered application has gone without its driver accepting a "
              + "probe connection (since it registered, if none yet): how long an ended "
              + "application's outputs have waited to be deleted. Up to appTimeout/4 (at most 10 "
              + "s) between probes of a live driver is normal; an application ends 5 s after its "
              + "driver's port starts refusing (or appTimeout, if shorter) and appTimeout after "
              + "its host went silent. 0 with no application.");
  public static final Metric RECOVERING =
      gauge(
          "recovering",
          FLAG,
          "1 while the service takes back the outputs a previous run recorded (before it is "
              + "ready; recoveryPath set), else 0.");

  // What happened since start.

  public static final Metric OUTPUTS_TAKEN =
      counter("outputsTaken", COUNT, "Map outputs taken over and published.");
  public static final Metric OUTPUTS_WITH_CHECKSUMS =
      counter(
          "outputsWithChecksums",
          COUNT,
          "Of those, outputs published with Spark's checksums (inline, or in a metadata region for"
              + " more than 1023 reduce partitions), so reducers verify their blocks (the others"
              + " are read unverified).");
  public static final Metric OUTPUTS_RECOVERED =
      counter(
          "outputsRecovered",
          COUNT,
          "Map outputs of a previous run taken back at start (files checked again, registered "
              + "under new keys).");
  public static final Metric RECOVERY_DROPPED =
      counter(
          "recoveryDropped.<reason>",
          COUNT,
          "Recorded map outputs not taken back at start, by reason: corrupt (a record that does "
              + "not read), application (its application could not be: unknown user, driver "
              + "host that does not resolve, over maxApplicationsPerUser), missing (a file is "
              + "gone), changed (another inode, size, time, owner or kind, or an index that no "
              + "longer fits its data), quota, registrationBudget. Their readers get fetch "
              + "failures.");
  public static final Metric RECOVERY_STORE_LOST =
      counter(
          "recoveryStoreLost",
          COUNT,
          "Starts whose recovery store was gone (while outputs remained) or could not be read: "
              + "the service started empty.");
  public static final Metric POINTERS_RESOLVED =
      counter(
          "pointersResolved",
          COUNT,
          "Readers' directory pointers from before a restart resolved to the chunk that "
              + "replaced them (RESOLVE on resolvePort): those readers go on one-sided.");
  public static final Metric POINTER_RESOLVES_REFUSED =
      counter(
          "pointerResolvesRefused",
          COUNT,
          "RESOLVE requests refused: malformed, not authenticated with the pointer's "
              + "application token, or naming a pointer no output was taken back under (the "
              + "reader then gets a fetch failure).");
  public static final Metric OUTPUTS_REFUSED =
      counter(
          "outputsRefused",
          COUNT,
          "Map outputs refused, for any reason (their executor serves them itself).");
  public static final Metric OUTPUTS_REPLACED =
      counter(
          "outputsReplaced",
          COUNT,
          "Held outputs replaced by a republished map index (their files and quota released).");
  public static final Metric QUOTA_REFUSALS =
      counter("quotaRefusals", COUNT, "Requests refused by a quota (every quota key together).");
  public static final Metric REFUSALS =
      counter(
          "refusals.<reason>",
          COUNT,
          "Requests refused, by reason: the key of the quota that was hit (maxClients, "
              + "maxClientsPerUser, maxClientsPerApplication, maxApplicationsPerUser, "
              + "maxOutputs, maxOutputsPerUser, maxOutputsPerApplication, maxBytesPerUser, "
              + "maxBytesPerApplication), userNotAllowed (not in allowedUsers), badOutput (a "
              + "file the service would not take), registrationBudget (the transfer node's "
              + "budget is full), stopping, registration (another token or driver address, or "
              + "a driver host that does not resolve).");
  public static final Metric CLIENTS_REFUSED =
      counter(
          "clientsRefused",
          COUNT,
          "Connections refused at accept (user not allowed, or a connection quota).");
  public static final Metric CLIENTS_TIMED_OUT =
      counter("clientsTimedOut", COUNT, "Connections closed past registerTimeout or frameTimeout.");
  public static final Metric APPLICATIONS_ENDED =
      counter(
          "applicationsEnded",
          COUNT,
          "Applications ended (driver gone, cluster manager, service stop); their outputs "
              + "deleted.");
  public static final Metric SHUFFLES_REMOVED =
      counter("shufflesRemoved", COUNT, "Shuffles removed on Spark's request (unregisterShuffle).");
  public static final Metric DRIVER_PROBES =
      counter("driverProbes", COUNT, "Driver liveness probes made.");

  /** Every statistic of the service's own, in documentation order. */
  public static final List<Metric> ALL =
      List.of(
          READY,
          APPLICATIONS,
          CLIENTS,
          OUTPUTS_HELD,
          BYTES_HELD,
          MAX_OUTPUTS,
          REGISTRATION_BUDGET,
          DIRECTORY_BYTES,
          TRANSFER_CONNECTIONS,
          CLEANUP_LAG,
          RECOVERING,
          OUTPUTS_TAKEN,
          OUTPUTS_WITH_CHECKSUMS,
          OUTPUTS_RECOVERED,
          RECOVERY_DROPPED,
          RECOVERY_STORE_LOST,
          POINTERS_RESOLVED,
          POINTER_RESOLVES_REFUSED,
          OUTPUTS_REFUSED,
          OUTPUTS_REPLACED,
          QUOTA_REFUSALS,
          REFUSALS,
          CLIENTS_REFUSED,
          CLIENTS_TIMED_OUT,
          APPLICATIONS_ENDED,
          SHUFFLES_REMOVED,
          DRIVER_PROBES);

  /** The Markdown table of {@link #ALL} (docs/SHUFFLE-SERVICE.md shows it). */
  public static String markdownTable() {
    return Metrics.markdownTable(ALL);
  }

  /** Whether {@code key} of {@link ShuffleService#stats()} is declared here. */
  static boolean declares(String key) {
    return ALL.stream().anyMatch(m -> m.matches(key));
  }
}
