package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** A tcp node reports exactly the declared node and tcp metrics, in declaration order. */
class TransportMetricsReportedTest {
  @Test
  void aTcpNodeReportsTheDeclaredMetricsInOrder() throws Exception {
    byte[] data = TransferContractTest.random(new java.util.Random(3), 4096);
    try (TransferNode server = tcpNode();
        TransferNode client = tcpNode()) {
      MemoryRegion r = TestRegions.register(server, TransferContractTest.direct(data));
      TransferContractTest.await(
              client.connection(server.localAddress()).read(ReadRequest.of(r.remote(), 0, 4096)))
          .release();
      r.close();

      TransferStats s = client.stats();
      List<String> declared = new ArrayList<>();
      List<String> families = new ArrayList<>();
      Stream.concat(TransportMetrics.NODE.stream(), TransportMetrics.TCP.stream())
          .forEach(m -> (m.isFamily() ? families : declared).add(m.name()));
      List<String> reported = new ArrayList<>();
      for (String key : s.asMap().keySet()) {
        Metric m = TransportMetrics.find(key);
        assertNotNull(m, "not declared: " + key);
        if (!m.isFamily()) {
          reported.add(key);
        }
      }
      assertEquals(declared, reported);
      assertTrue(
          s.asMap().containsKey("memory." + TransferNode.READ_POOL + ".bytes"), s.toString());

      Map<Metric, Long> byMetric = s.byMetric();
      assertEquals(1L, byMetric.get(TransportMetrics.READS_COMPLETED));
      assertEquals(4096L, s.get(TransportMetrics.BYTES_READ));
      assertEquals(4096L, s.asMap().get("bytesRead"));
      assertEquals(1L, server.stats().get(TransportMetrics.SERVED_READS));
      assertEquals(0L, s.get(TransportMetrics.VERBS_POSTED_READS), "not reported by tcp: 0");
    }
  }

  private static TransferNode tcpNode() {
    return TransferNode.start(
        TransferConfig.builder().provider(ProviderKind.TCP).bindAddress("127.0.0.1").build());
  }
}
