package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Histogram;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Per-peer latency histograms stay bounded and are announced once each, early or late. */
class PeerReadLatenciesTest {
  @Test
  void peersBeyondTheBoundShareOneHistogram() {
    PeerReadLatencies l = new PeerReadLatencies();
    Map<String, Histogram> announced = new LinkedHashMap<>();
    l.record("0", 10);
    l.onHistogram((peer, h) -> assertEquals(null, announced.put(peer, h), "twice: " + peer));
    for (int i = 0; i < 3 * PeerReadLatencies.MAX_PEERS; i++) {
      l.record(String.valueOf(i), 100 + i);
    }
    Map<String, Histogram> all = l.histograms();
    assertEquals(PeerReadLatencies.MAX_PEERS + 1, all.size(), all.keySet().toString());
    assertEquals(all, announced);
    assertEquals(2, all.get("0").getCount());
    assertEquals(2 * PeerReadLatencies.MAX_PEERS, all.get(PeerReadLatencies.OTHER).getCount());
    long total = all.values().stream().mapToLong(Histogram::getCount).sum();
    assertEquals(3 * PeerReadLatencies.MAX_PEERS + 1, total);
    assertTrue(all.get("1").getSnapshot().getMax() == 101);
  }
}
