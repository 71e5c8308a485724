package io.memwire.flight;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** Counters of an {@link RdmaFlightProducer}'s data plane; {@link #snapshot()} for reading. */
final class ServerStats {
  final LongAdder sessionsStarted = new LongAdder();
  final LongAdder sessionsRefused = new LongAdder();
  final LongAdder sessionsCancelled = new LongAdder();
  final LongAdder batchesCopied = new LongAdder();
  final LongAdder batchesInPlace = new LongAdder();
  final LongAdder bodyBytes = new LongAdder();
  final LongAdder leasesFreed = new LongAdder();

  /** FREE messages received; below {@code leasesFreed} when the client groups its FREEs. */
  final LongAdder freeMessages = new LongAdder();

  final LongAdder leasesReleasedUnfreed = new LongAdder();
  final LongAdder leasesExpired = new LongAdder();
  final LongAdder creditWaits = new LongAdder();

  /** Batches that could not be leased (memory limit, registration): the exchange failed. */
  final LongAdder leasesFailed = new LongAdder();

  private final AtomicLong peakLeasedBytes = new AtomicLong();

  void notePeak(long leased) {
    peakLeasedBytes.accumulateAndGet(leased, Math::max);
  }

  /**
   * The counters under their {@link FlightStatsMetrics} names (the current levels are added by the
   * producer).
   */
  Map<String, Long> snapshot() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put(FlightStatsMetrics.SESSIONS_STARTED.name(), sessionsStarted.sum());
    m.put(FlightStatsMetrics.SESSIONS_REFUSED.name(), sessionsRefused.sum());
    m.put(FlightStatsMetrics.SESSIONS_CANCELLED.name(), sessionsCancelled.sum());
    m.put(FlightStatsMetrics.BATCHES_COPIED.name(), batchesCopied.sum());
    m.put(FlightStatsMetrics.BATCHES_IN_PLACE.name(), batchesInPlace.sum());
    m.put(FlightStatsMetrics.BODY_BYTES.name(), bodyBytes.sum());
    m.put(FlightStatsMetrics.LEASES_FREED.name(), leasesFreed.sum());
    m.put(FlightStatsMetrics.FREE_MESSAGES.name(), freeMessages.sum());
    m.put(FlightStatsMetrics.LEASES_RELEASED_UNFREED.name(), leasesReleasedUnfreed.sum());
    m.put(FlightStatsMetrics.LEASES_EXPIRED.name(), leasesExpired.sum());
    m.put(FlightStatsMetrics.CREDIT_WAITS.name(), creditWaits.sum());
    m.put(FlightStatsMetrics.LEASES_FAILED.name(), leasesFailed.sum());
    m.put(FlightStatsMetrics.PEAK_LEASED_BYTES.name(), peakLeasedBytes.get());
    return m;
  }
}
