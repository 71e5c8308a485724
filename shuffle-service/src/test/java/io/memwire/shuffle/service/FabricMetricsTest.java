package io.memwire.shuffle.service;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.fabric.NicCounters;
import io.memwire.transfer.fabric.RecordedSysfs;
import io.memwire.transfer.fabric.SysfsRoot;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The NIC counters on /metrics, per device and port as labels, from recorded sysfs trees. */
class FabricMetricsTest {
  @TempDir Path tmp;

  private static String scrape(NicCounters counters) throws Exception {
    PrometheusRegistry registry = new PrometheusRegistry();
    FabricMetrics.register(registry, counters);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, registry.scrape());
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void everyCounterIsASampleWithItsDeviceAndPort() throws Exception {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "mlx5", "rxe");
    String text = scrape(new NicCounters(sys.root(), System::nanoTime));
    assertTrue(
        text.contains(
            "memwire_nic_counter_total{counter=\"np_cnp_sent\",device=\"mlx5_0\","
                + "group=\"hw_counters\",port=\"1\"} 0.0"),
        text);
    // 4294967000 units of 4 octets.
    assertTrue(
        text.contains(
            "memwire_nic_counter_total{counter=\"port_xmit_data\",device=\"mlx5_0\","
                + "group=\"counters\",port=\"1\"} 1.7179868E10"),
        text);
    assertTrue(
        text.contains(
            "memwire_nic_counter_total{counter=\"sent_pkts\",device=\"rxe0\","
                + "group=\"hw_counters\",port=\"1\"} 120034.0"),
        text);
    assertTrue(!text.contains("lifespan"), text);
  }

  @Test
  void noDeviceNoSample() throws Exception {
    String text = scrape(new NicCounters(new SysfsRoot(tmp), System::nanoTime));
    assertTrue(!text.contains("memwire_nic_counter_total{"), text);
  }
}
