package io.memwire.shuffle.service;

import io.memwire.transfer.fabric.CounterKey;
import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.NicCounters;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;

/**
 * The node's NIC counters on the service's {@code /metrics}: {@value #NAME}{@code {device, port,
 * group, counter}}, read from sysfs at each scrape ({@link NicCounters}: every RDMA device's port
 * and hardware counters by the names the driver gives them; port 0 is a device-wide counter).
 * {@code port_xmit_data} and {@code port_rcv_data} are turned from 4-octet units into octets; a
 * 32-bit counter that wraps looks like a reset, which {@code rate()} absorbs. None on a node
 * without RDMA devices. Not a {@link ServiceMetrics} metric: its names come from the driver.
 */
final class FabricMetrics {
  /** The metric's name as Prometheus shows it (a counter: the client adds {@code _total}). */
  static final String NAME = "memwire_nic_counter";

  private FabricMetrics() {}

  /** Registers the NIC counters of {@code counters}' devices in {@code registry}. */
  static void register(PrometheusRegistry registry, NicCounters counters) {
    CounterWithCallback.builder()
        .name(NAME)
        .help(
            "The RDMA NIC's own counters (sysfs counters/ and hw_counters/), by device, port"
                + " (0: device-wide), group and the driver's counter name; port_xmit_data and"
                + " port_rcv_data in octets.")
        .labelNames("device", "port", "group", "counter")
        .callback(
            cb -> {
              CounterSample s = counters.sample();
              for (Map.Entry<CounterKey, Long> e : s.values().entrySet()) {
                CounterKey k = e.getKey();
                double v = e.getValue() < 0 ? 0x1p64 + e.getValue() : e.getValue();
                cb.call(
                    k.inFourOctets() ? v * 4 : v,
                    k.device(),
                    Integer.toString(k.port()),
                    k.group(),
                    k.name());
              }
            })
        .register(registry);
  }
}
