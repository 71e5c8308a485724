package io.memwire.transfer.settings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferNode;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class SettingTest {
  @Test
  void rangeTextIsPrintedFromTheBoundsInTheUnitsThatParse() {
    assertEquals("64k", Units.bytesText(64 * 1024));
    assertEquals("2g-1", Units.bytesText(Integer.MAX_VALUE));
    assertEquals("1p", Units.bytesText(1L << 50));
    assertEquals("4097", Units.bytesText(4097));
    assertEquals("1023", Units.bytesText(1023));
    assertEquals("0", Units.bytesText(0));
    assertEquals("100ms", Units.millisText(100));
    assertEquals("1500ms", Units.millisText(1500));
    assertEquals("90s", Units.millisText(90_000));
    assertEquals("10min", Units.millisText(600_000));
    assertEquals("24h", Units.millisText(86_400_000));
    Setting<Duration> d =
        Setting.key("t")
            .doc("x")
            .since("0.1.0")
            .duration(250, 7_200_000, "0 = never")
            .withDefault("1s");
    assertEquals("250ms to 2h; 0 = never", d.rangeText());
    assertEquals(Duration.ofSeconds(1), d.defaultValue());
  }

  @Test
  void aDefaultOutsideItsRangeIsADeclarationError() {
    assertThrows(
        TransferConfigException.class,
        () -> Setting.key("n").doc("x").since("0.1.0").count(1, 8).withDefault("9"));
    assertThrows(
        IllegalStateException.class,
        () -> Setting.key("n").since("0.1.0").count(1, 8).withDefault("2"));
  }

  @Test
  void valuesAreReadWithThePrefixAndErrorsNameTheFullKey() {
    Setting<Boolean> b = Setting.key("flag").doc("x").since("0.1.0").bool().withDefault("false");
    assertEquals(Boolean.TRUE, b.valueIn(Map.of("p.flag", " TRUE "), "p."));
    assertEquals(Boolean.FALSE, b.valueIn(Map.of("q.flag", "true"), "p."));
    assertTrue(
        assertThrows(TransferConfigException.class, () -> b.valueIn(Map.of("p.flag", "yes"), "p."))
            .getMessage()
            .contains("p.flag=yes is not true or false"));
    Setting<Long> s =
        Setting.key("size").doc("x").since("0.1.0").bytes(1024, 1 << 20).withDefault("4k");
    assertTrue(
        assertThrows(TransferConfigException.class, () -> s.parse("p.", "lots"))
            .getMessage()
            .contains("p.size=lots is not a size"));
  }

  @Test
  void unknownKeysUnderThePrefixAreRefused() {
    Settings.refuseUnknown(Map.of("p.a", "1", "other.b", "2"), "p.", java.util.List.of("a"));
    TransferConfigException e =
        assertThrows(
            TransferConfigException.class,
            () -> Settings.refuseUnknown(Map.of("p.b", "1"), "p.", java.util.List.of("a")));
    assertTrue(e.getMessage().startsWith("unknown configuration key p.b"), e.getMessage());
  }

  /** The JVM system properties: documented bounds probed through the property itself. */
  @Test
  void systemPropertiesEnforceTheirDocumentedRange() {
    assertEquals("0 to 2g-1", TransportSettings.TCP_SENDFILE_MIN_BYTES.rangeText());
    assertEquals("0 to 1000000", TransportSettings.VERBS_CQ_SPIN_MICROS.rangeText());
    assertEquals(
        Optional.of(256L << 10), withProperty(TransportSettings.TCP_SENDFILE_MIN_BYTES, null));
    assertEquals(Optional.of(50L), withProperty(TransportSettings.VERBS_CQ_SPIN_MICROS, null));
    assertEquals(
        Optional.of(1L << 20), withProperty(TransportSettings.TCP_SENDFILE_MIN_BYTES, "1m"));
    for (Setting<Long> s :
        java.util.List.of(
            TransportSettings.TCP_SENDFILE_MIN_BYTES, TransportSettings.VERBS_CQ_SPIN_MICROS)) {
      long min = s.min().getAsLong();
      long max = s.max().getAsLong();
      assertEquals(Optional.of(min), withProperty(s, Long.toString(min)));
      assertEquals(Optional.of(max), withProperty(s, Long.toString(max)));
      for (long bad : new long[] {min - 1, max + 1}) {
        TransferConfigException e =
            assertThrows(TransferConfigException.class, () -> withProperty(s, Long.toString(bad)));
        assertTrue(
            e.getMessage().startsWith(s.name() + "=" + bad + " is out of range: " + s.rangeText()),
            e.getMessage());
      }
    }
  }

  @Test
  void aBadSendfilePropertyFailsTheTcpStartNamingIt() {
    String key = TransportSettings.TCP_SENDFILE_MIN_BYTES.name();
    String old = System.getProperty(key);
    System.setProperty(key, "-5");
    try {
      TransferConfig tcp = TransferConfig.builder().provider(ProviderKind.TCP).build();
      TransferConfigException e =
          assertThrows(TransferConfigException.class, () -> TransferNode.start(tcp).close());
      assertTrue(e.getMessage().contains(key + "=-5 is out of range: 0 to 2g-1"), e.getMessage());
    } finally {
      if (old == null) {
        System.clearProperty(key);
      } else {
        System.setProperty(key, old);
      }
    }
  }

  private static <T> Optional<T> withProperty(Setting<T> s, String value) {
    String old = System.getProperty(s.name());
    try {
      if (value == null) {
        System.clearProperty(s.name());
      } else {
        System.setProperty(s.name(), value);
      }
      return s.fromSystemProperties();
    } finally {
      if (old == null) {
        System.clearProperty(s.name());
      } else {
        System.setProperty(s.name(), old);
      }
    }
  }
}
