package io.memwire.transfer.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MetricTest {
  @Test
  void aFamilyMemberKeepsKindUnitAndDoc() {
    Metric member = TransportMetrics.MEMORY_CHILD_PEAK_BYTES.of("readPool");
    assertEquals("memory.readPool.peakBytes", member.name());
    assertEquals(Metric.Kind.GAUGE, member.kind());
    assertEquals(Metric.Unit.BYTES, member.unit());
    assertEquals(TransportMetrics.MEMORY_CHILD_PEAK_BYTES.doc(), member.doc());
    assertEquals(member, TransportMetrics.MEMORY_CHILD_PEAK_BYTES.of("readPool"));
    assertFalse(member.isFamily());
  }

  @Test
  void findNamesTheDeclarationOfAKeyOrOfAFamilyMember() {
    assertSame(TransportMetrics.BYTES_READ, TransportMetrics.find("bytesRead"));
    assertSame(TransportMetrics.MEMORY_CHILD_UNITS, TransportMetrics.find("memory.x.units"));
    assertNull(TransportMetrics.find("memory..units"), "an empty part is no member");
    assertNull(TransportMetrics.find("bytesReadTotal"));
  }

  @Test
  void onlyAFamilyHasMembers() {
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> TransportMetrics.BYTES_READ.of("x"));
    assertTrue(e.getMessage().contains("bytesRead"), e.getMessage());
  }

  @Test
  void aDeclarationNeedsADoc() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> Metric.counter("x", Metric.Unit.COUNT, " "));
    assertEquals("x: doc is required", e.getMessage());
  }

  @Test
  void namesAreDeclaredOnce() {
    Set<String> seen = new HashSet<>();
    for (Metric m : TransportMetrics.ALL) {
      assertTrue(seen.add(m.name()), "declared twice: " + m.name());
    }
  }
}
