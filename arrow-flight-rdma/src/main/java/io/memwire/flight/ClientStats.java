package io.memwire.flight;

import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Locale;
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
  private final Map<FallbackReason, LongAdder> fallbacks = new EnumMap<>(FallbackReason.class);

  ClientStats() {
    for (FallbackReason r : FallbackReason.values()) {
      fallbacks.put(r, new LongAdder());
    }
  }

  void fellBack(FallbackReason reason) {
    fallbacks.get(reason).increment();
  }

  Map<String, Long> snapshot() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("streamsOneSided", streamsOneSided.sum());
    m.put("streamsGrpc", streamsGrpc.sum());
    m.put("batchesOneSided", batchesOneSided.sum());
    m.put("bodyBytesOneSided", bodyBytesOneSided.sum());
    m.put("bodiesVerified", bodiesVerified.sum());
    m.put("bodiesMismatched", bodiesMismatched.sum());
    long all = 0;
    for (Map.Entry<FallbackReason, LongAdder> e : fallbacks.entrySet()) {
      long n = e.getValue().sum();
      all += n;
      m.put("fallbacks." + e.getKey().name().toLowerCase(Locale.ROOT), n);
    }
    m.put("fallbacks", all);
    return m;
  }
}
