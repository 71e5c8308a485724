package io.memwire.flight;

import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** Counters of one {@link RdmaFlightClient}, updated by any of its threads. */
final class ClientStats {
  final LongAdder streamsOneSided = new LongAdder();
  final LongAdder streamsGrpc = new LongAdder();
  final LongAdder batchesOneSided = new LongAdder();
  final LongAdder bodyBytesOneSided = new LongAdder();
  final LongAdder bodiesVerified = new LongAdder();
  final LongAdder bodiesMismatched = new LongAdder();

  /** Batches read while the server ended their lease (guard revoked or region closed), dropped. */
  final LongAdder staleBatchesRejected = new LongAdder();

  private final Map<FallbackReason, LongAdder> fallbacks = new EnumMap<>(FallbackReason.class);

  ClientStats() {
    for (FallbackReason r : FallbackReason.values()) {
      fallbacks.put(r, new LongAdder());
    }
  }

  void fellBack(FallbackReason reason) {
    fallbacks.get(reason).increment();
  }

  /** The counters under their {@link FlightStatsMetrics} names. */
  Map<String, Long> snapshot() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put(FlightStatsMetrics.STREAMS_ONE_SIDED.name(), streamsOneSided.sum());
    m.put(FlightStatsMetrics.STREAMS_GRPC.name(), streamsGrpc.sum());
    m.put(FlightStatsMetrics.BATCHES_ONE_SIDED.name(), batchesOneSided.sum());
    m.put(FlightStatsMetrics.BODY_BYTES_ONE_SIDED.name(), bodyBytesOneSided.sum());
    m.put(FlightStatsMetrics.BODIES_VERIFIED.name(), bodiesVerified.sum());
    m.put(FlightStatsMetrics.BODIES_MISMATCHED.name(), bodiesMismatched.sum());
    m.put(FlightStatsMetrics.STALE_BATCHES_REJECTED.name(), staleBatchesRejected.sum());
    long all = 0;
    for (Map.Entry<FallbackReason, LongAdder> e : fallbacks.entrySet()) {
      long n = e.getValue().sum();
      all += n;
      m.put(FlightStatsMetrics.fallbackKey(e.getKey()), n);
    }
    m.put(FlightStatsMetrics.FALLBACKS.name(), all);
    return m;
  }
}
