package io.memwire.shuffle.service;

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

  final LongAdder outputsRecovered = new LongAdder();
  final LongAdder recoveryStoreLost = new LongAdder();
  private final Map<String, LongAdder> recoveryDrops = new LinkedHashMap<>();
  final LongAdder outputsTaken = new LongAdder();
  final LongAdder outputsWithChecksums = new LongAdder();
  final LongAdder outputsRefused = new LongAdder();
  final LongAdder outputsReplaced = new LongAdder();
  final LongAdder clientsRefused = new LongAdder();
  final LongAdder clientsTimedOut = new LongAdder();
  final LongAdder applicationsEnded = new LongAdder();
  final LongAdder shufflesRemoved = new LongAdder();
  final LongAdder driverProbes = new LongAdder();
  final LongAdder pointersResolved = new LongAdder();
  final LongAdder pointerResolvesRefused = new LongAdder();
  private final Map<String, LongAdder> refusals = new LinkedHashMap<>();

  ServiceCounters() {
    for (String r : REFUSAL_REASONS) {
      refusals.put(r, new LongAdder());
    }
    for (String r : RECOVERY_DROPS) {
      recoveryDrops.put(r, new LongAdder());
    }
  }

  /** Every counter above, then {@link #putRecoveryDrops} and {@link #putRefusals}. */
  void putCounts(Map<String, Long> m) {
    m.put("outputsTaken", outputsTaken.sum());
    m.put("outputsWithChecksums", outputsWithChecksums.sum());
    m.put("outputsRefused", outputsRefused.sum());
    m.put("outputsReplaced", outputsReplaced.sum());
    m.put("clientsRefused", clientsRefused.sum());
    m.put("clientsTimedOut", clientsTimedOut.sum());
    m.put("applicationsEnded", applicationsEnded.sum());
    m.put("shufflesRemoved", shufflesRemoved.sum());
    m.put("driverProbes", driverProbes.sum());
    m.put("outputsRecovered", outputsRecovered.sum());
    m.put("recoveryStoreLost", recoveryStoreLost.sum());
    m.put("pointersResolved", pointersResolved.sum());
    m.put("pointerResolvesRefused", pointerResolvesRefused.sum());
    putRecoveryDrops(m);
    putRefusals(m);
  }

  /** Counts a recorded output not taken back; {@code reason} is one of {@link #RECOVERY_DROPS}. */
  void dropped(String reason) {
    recoveryDrops.get(reason).increment();
  }

  /** {@code recoveryDropped.<reason>} for each of {@link #RECOVERY_DROPS}. */
  void putRecoveryDrops(Map<String, Long> into) {
    recoveryDrops.forEach((k, v) -> into.put("recoveryDropped." + k, v.sum()));
  }

  /** Counts a refusal; {@code reason} is one of {@link #REFUSAL_REASONS}. */
  void refused(String reason) {
    refusals.get(reason).increment();
  }

  /** {@code refusals.<reason>} for each of {@link #REFUSAL_REASONS}. */
  void putRefusals(Map<String, Long> into) {
    refusals.forEach((k, v) -> into.put("refusals." + k, v.sum()));
  }
}
