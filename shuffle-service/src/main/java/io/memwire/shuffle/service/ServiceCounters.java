package io.memwire.shuffle.service;

import io.memwire.transfer.metrics.Metric;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The shuffle service's own counters (its transfer node keeps its own), updated by any thread;
 * {@link ShuffleService#stats()} reports them and {@link ServiceMetrics} exports them.
 */
final class ServiceCounters {
  /**
   * Why requests were refused, besides the quota keys {@link Quotas} counts: a user not in
   * allowedUsers, an output the service would not take, the transfer node's registration budget, a
   * service that is stopping, a registration with another token or driver (or an unresolvable one).
   */
  static final List<String> REFUSAL_REASONS =
      List.of("userNotAllowed", "badOutput", "registrationBudget", "stopping", "registration");

  /**
   * Why a recorded output was not taken back at start: its record could not be read (corrupt), its
   * application could not (application: unknown user, unresolvable driver, over its user's quota),
   * a file is gone (missing) or is not the one recorded (changed: another inode, size or time,
   * owner or kind, or an index that no longer fits its data), a quota (quota) or the transfer
   * node's budget (registrationBudget) is full.
   */
  static final List<String> RECOVERY_DROPS =
      List.of("corrupt", "application", "missing", "changed", "quota", "registrationBudget");

  /** Every counter made from its declaration, in declaration order. */
  private final Map<Metric, LongAdder> counts = new LinkedHashMap<>();

  final LongAdder outputsRecovered = counter(ServiceStats.OUTPUTS_RECOVERED);
  final LongAdder recoveryStoreLost = counter(ServiceStats.RECOVERY_STORE_LOST);
  private final Map<String, LongAdder> recoveryDrops = new LinkedHashMap<>();
  final LongAdder outputsTaken = counter(ServiceStats.OUTPUTS_TAKEN);
  final LongAdder outputsWithChecksums = counter(ServiceStats.OUTPUTS_WITH_CHECKSUMS);
  final LongAdder outputsRefused = counter(ServiceStats.OUTPUTS_REFUSED);
  final LongAdder outputsReplaced = counter(ServiceStats.OUTPUTS_REPLACED);
  final LongAdder clientsRefused = counter(ServiceStats.CLIENTS_REFUSED);
  final LongAdder clientsTimedOut = counter(ServiceStats.CLIENTS_TIMED_OUT);
  final LongAdder applicationsEnded = counter(ServiceStats.APPLICATIONS_ENDED);
  final LongAdder shufflesRemoved = counter(ServiceStats.SHUFFLES_REMOVED);
  final LongAdder driverProbes = counter(ServiceStats.DRIVER_PROBES);
  final LongAdder pointersResolved = counter(ServiceStats.POINTERS_RESOLVED);
  final LongAdder pointerResolvesRefused = counter(ServiceStats.POINTER_RESOLVES_REFUSED);
  private final Map<String, LongAdder> refusals = new LinkedHashMap<>();

  ServiceCounters() {
    for (String r : REFUSAL_REASONS) {
      refusals.put(r, new LongAdder());
    }
    for (String r : RECOVERY_DROPS) {
      recoveryDrops.put(r, new LongAdder());
    }
  }

  private LongAdder counter(Metric m) {
    if (m.kind() != Metric.Kind.COUNTER || m.isFamily()) {
      throw new IllegalArgumentException(m + " is not a single counter");
    }
    LongAdder a = new LongAdder();
    counts.put(m, a);
    return a;
  }

  /** Every counter above, then {@link #putRecoveryDrops} and {@link #putRefusals}. */
  void putCounts(Map<String, Long> m) {
    counts.forEach((metric, adder) -> m.put(metric.name(), adder.sum()));
    putRecoveryDrops(m);
    putRefusals(m);
  }

  /** Counts a recorded output not taken back; {@code reason} is one of {@link #RECOVERY_DROPS}. */
  void dropped(String reason) {
    recoveryDrops.get(reason).increment();
  }

  /** {@code recoveryDropped.<reason>} for each of {@link #RECOVERY_DROPS}. */
  void putRecoveryDrops(Map<String, Long> into) {
    recoveryDrops.forEach((k, v) -> into.put(ServiceStats.RECOVERY_DROPPED.of(k).name(), v.sum()));
  }

  /** Counts a refusal; {@code reason} is one of {@link #REFUSAL_REASONS}. */
  void refused(String reason) {
    refusals.get(reason).increment();
  }

  /** {@code refusals.<reason>} for each of {@link #REFUSAL_REASONS}. */
  void putRefusals(Map<String, Long> into) {
    refusals.forEach((k, v) -> into.put(ServiceStats.REFUSALS.of(k).name(), v.sum()));
  }
}
