package io.memwire.shuffle.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.metrics.TransportMetrics;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What {@link ServiceMetrics} exports from a stats map, apart from any Prometheus client. */
class ServiceMetricsTest {
  private static ServiceMetrics.Metric exported(String name) {
    return ServiceMetrics.ALL.stream()
        .filter(m -> m.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("not declared: " + name));
  }

  @Test
  void aCounterTheNodesProviderDoesNotKeepHasNoSampleNotAZero() {
    // A verbs or ucx node reports no servedReads: the serving CPU never sees a one-sided read.
    Map<String, Long> verbsNode =
        Map.of(
            ShuffleService.NODE_PREFIX + TransportMetrics.REGISTERED_BYTES.name(), 4096L,
            ShuffleService.NODE_PREFIX + TransportMetrics.VERBS_CONNECTIONS_REFUSED.name(), 2L);
    for (String name :
        new String[] {
          "served_reads", "served_bytes", "served_errors", "transfer_connections_refused"
        }) {
      assertTrue(exported(name).values(verbsNode).isEmpty(), name);
    }
    assertEquals(Map.of("", 4096.0), exported("registered_bytes").values(verbsNode));
  }

  @Test
  void aCounterTheProviderKeepsIsExportedEvenAtZero() {
    Map<String, Long> tcpNode =
        Map.of(ShuffleService.NODE_PREFIX + TransportMetrics.SERVED_READS.name(), 0L);
    assertEquals(Map.of("", 0.0), exported("served_reads").values(tcpNode));
  }
}
