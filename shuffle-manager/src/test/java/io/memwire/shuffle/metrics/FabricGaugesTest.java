package io.memwire.shuffle.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.memwire.transfer.fabric.NicCounters;
import io.memwire.transfer.fabric.RecordedSysfs;
import io.memwire.transfer.fabric.SysfsRoot;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The executor plugin's NIC counter gauges on recorded sysfs trees. */
class FabricGaugesTest {
  @TempDir Path tmp;

  @Test
  void aGaugePerCounterReadAgainAfterASecond() {
    RecordedSysfs sys = RecordedSysfs.write(tmp, "mlx5", "rxe");
    MetricRegistry r = new MetricRegistry();
    FabricGauges.register(r, new NicCounters(sys.root(), System::nanoTime));
    assertEquals(4294967000L * 4, r.getGauges().get("nic.mlx5_0.1.port_xmit_data").getValue());
    Gauge<?> oos = r.getGauges().get("nic.mlx5_0.1.out_of_sequence");
    assertEquals(0L, oos.getValue());
    assertEquals(120034L, r.getGauges().get("nic.rxe0.1.sent_pkts").getValue());
    assertTrue(r.getGauges().keySet().stream().noneMatch(n -> n.contains("lifespan")));
    sys.set("class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence", 9);
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!Long.valueOf(9).equals(oos.getValue()) && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertEquals(9L, oos.getValue(), "re-read within a second or so");
  }

  @Test
  void noDeviceNoGauge() {
    MetricRegistry r = new MetricRegistry();
    FabricGauges.register(r, new NicCounters(new SysfsRoot(tmp), System::nanoTime));
    assertTrue(r.getGauges().isEmpty());
  }
}
