package io.memwire.shuffle.metrics;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.memwire.transfer.fabric.CounterKey;
import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.NicCounters;
import java.util.concurrent.TimeUnit;

/**
 * The executor host's NIC counters as gauges of {@link MemwireMetricsPlugin}'s executor side,
 * {@code nic.<device>.<port>.<counter>} (port 0: a device-wide counter; {@code port_xmit_data} and
 * {@code port_rcv_data} in octets), for the counters present when the plugin starts. Values are
 * read from sysfs at most every second however many gauges a sink reads. None without RDMA devices.
 */
final class FabricGauges {
  private final NicCounters counters;
  private volatile CounterSample last;

  private FabricGauges(NicCounters counters) {
    this.counters = counters;
    this.last = counters.sample();
  }

  /** Registers a gauge per NIC counter of this host in {@code registry}. */
  static void register(MetricRegistry registry) {
    register(registry, NicCounters.system());
  }

  static void register(MetricRegistry registry, NicCounters counters) {
    FabricGauges g = new FabricGauges(counters);
    for (CounterKey k : g.last.values().keySet()) {
      String name =
          "nic." + k.device().replace('.', '_') + "." + k.port() + "." + k.name().replace('.', '_');
      try {
        registry.register(name, (Gauge<Long>) () -> g.value(k));
      } catch (IllegalArgumentException sameNameInTwoGroups) {
        // a driver naming a counter the same in counters/ and hw_counters/: the first one stays
      }
    }
  }

  private Long value(CounterKey k) {
    CounterSample s = last;
    if (System.nanoTime() - s.nanos() > TimeUnit.SECONDS.toNanos(1)) {
      s = counters.sample();
      last = s;
    }
    long v = s.raw(k);
    return v < 0 ? null : k.inFourOctets() ? v * 4 : v;
  }
}
