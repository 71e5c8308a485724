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

  Map<String, Long> snapshot() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("sessionsStarted", sessionsStarted.sum());
    m.put("sessionsRefused", sessionsRefused.sum());
    m.put("sessionsCancelled", sessionsCancelled.sum());
    m.put("batchesCopied", batchesCopied.sum());
    m.put("batchesInPlace", batchesInPlace.sum());
    m.put("bodyBytes", bodyBytes.sum());
    m.put("leasesFreed", leasesFreed.sum());
    m.put("freeMessages", freeMessages.sum());
    m.put("leasesReleasedUnfreed", leasesReleasedUnfreed.sum());
    m.put("leasesExpired", leasesExpired.sum());
    m.put("creditWaits", creditWaits.sum());
    m.put("leasesFailed", leasesFailed.sum());
    m.put("peakLeasedBytes", peakLeasedBytes.get());
    return m;
  }
}
