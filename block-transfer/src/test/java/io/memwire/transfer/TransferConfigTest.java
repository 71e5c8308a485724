package io.memwire.transfer;

import static io.memwire.transfer.ConfigErrors.assertConfigError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.memwire.transfer.TransferConfigException.Problem;
import io.memwire.transfer.settings.FabricSettings;
import io.memwire.transfer.settings.Setting;
import io.memwire.transfer.settings.TransportSettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class TransferConfigTest {
  private static final String P = "spark.shuffle.rdma.";

  private static String error(Map<String, String> props) {
    return assertThrows(
            TransferConfigException.class, () -> TransferConfig.fromProperties(props, P))
        .getMessage();
  }

  @Test
  void readsEveryKeyWithUnitsAndPrefix() {
    TransferConfig c =
        TransferConfig.fromProperties(
            Map.ofEntries(
                Map.entry(P + "provider", "TCP"),
                Map.entry(P + "bindAddress", "127.0.0.1"),
                Map.entry(P + "port", "7077"),
                Map.entry(P + "connectTimeout", "3s"),
                Map.entry(P + "readTimeout", "2min"),
                Map.entry(P + "connectionIdleTimeout", "90s"),
                Map.entry(P + "maxOutstandingRequests", "32"),
                Map.entry(P + "maxOutstandingBytes", "16m"),
                Map.entry(P + "maxTransferSize", "256k"),
                Map.entry(P + "maxSegmentSize", "1g"),
                Map.entry(P + "registrationBudget", "2g"),
                Map.entry(P + "poolMaxBytes", "64m"),
                Map.entry(P + "ioThreads", "4"),
                Map.entry(P + "authSecret", "x"),
                Map.entry("spark.other", "not under the prefix: ignored")),
            P);
    assertEquals(ProviderKind.TCP, c.provider());
    assertEquals(7077, c.port());
    assertEquals(Duration.ofSeconds(3), c.connectTimeout());
    assertEquals(Duration.ofMinutes(2), c.readTimeout());
    assertEquals(Duration.ofSeconds(90), c.connectionIdleTimeout());
    assertEquals(c.connectionIdleTimeout(), c.toBuilder().build().connectionIdleTimeout());
    assertEquals(32, c.maxOutstandingRequests());
    assertEquals(16 << 20, c.maxOutstandingBytes());
    assertEquals(256 << 10, c.maxTransferSize());
    assertEquals(1 << 30, c.maxSegmentSize());
    assertEquals(2L << 30, c.registrationBudget());
    assertEquals(4, c.ioThreads());
    assertTrue(c.authSecret().isPresent());
    assertTrue(!c.toString().contains("authSecret=x"), "secret not printed");
  }

  @Test
  void badValuesNameTheirKey() {
    assertTrue(error(Map.of(P + "provider", "infiniband")).contains(P + "provider=infiniband"));
    assertTrue(error(Map.of(P + "port", "70000")).contains(P + "port=70000"));
    assertTrue(error(Map.of(P + "port", "x")).contains(P + "port=x"));
    assertTrue(error(Map.of(P + "readTimeout", "soon")).contains(P + "readTimeout=soon"));
    assertTrue(error(Map.of(P + "readTimeout", "1ms")).contains(P + "readTimeout"));
    assertTrue(error(Map.of(P + "maxTransferSize", "1k")).contains(P + "maxTransferSize"));
    assertTrue(error(Map.of(P + "maxSegmentSize", "3g")).contains(P + "maxSegmentSize"));
    assertTrue(
        error(Map.of(P + "maxOutstandingRequests", "0")).contains(P + "maxOutstandingRequests"));
    assertTrue(error(Map.of(P + "ioThreads", "1000")).contains(P + "ioThreads"));
    assertTrue(error(Map.of(P + "authSecret", "")).contains(P + "authSecret"));
    assertTrue(
        error(Map.of(P + "maxTransferSize", "64m", P + "maxOutstandingBytes", "1m"))
            .contains(P + "maxTransferSize"));
    assertTrue(
        error(Map.of(P + "poolMaxBytes", "4g", P + "registrationBudget", "1g"))
            .contains(P + "poolMaxBytes"));
    assertTrue(
        error(Map.of(P + "readTimout", "5s"))
            .contains("unknown configuration key " + P + "readTimout"),
        "a misspelt key is refused, not ignored");
  }

  @Test
  void valuesAreReadAndSetThroughTheirSettings() {
    TransferConfig c =
        TransferConfig.builder()
            .set(TransportSettings.PORT, 7077)
            .device(" mlx5_0 ")
            .authSecret(" s ")
            .maxTransferSize(256 << 10)
            .build();
    assertEquals(7077, c.get(TransportSettings.PORT));
    assertEquals(256L << 10, c.get(TransportSettings.MAX_TRANSFER_SIZE));
    assertEquals("mlx5_0", c.get(FabricSettings.DEVICE));
    assertEquals(" s ", new String(c.authSecret().orElseThrow(), StandardCharsets.UTF_8));
    assertNull(TransferConfig.defaults().get(FabricSettings.DEVICE));
    assertEquals(Optional.empty(), c.toBuilder().device("  ").build().device());

    TransferConfig copy = c.toBuilder().build();
    for (Setting<?> s : TransportSettings.ALL) {
      assertEquals(c.get(s), copy.get(s), s.name());
    }
    assertEquals(c.toString(), copy.toString());
    assertTrue(copy.authSecret().isPresent());

    assertEquals(
        P + "maxTransferSize=2097152 exceeds " + P + "maxOutstandingBytes=1048576",
        assertThrows(
                TransferConfigException.class,
                () ->
                    TransferConfig.builder()
                        .prefix(P)
                        .maxOutstandingBytes(1 << 20)
                        .maxTransferSize(2 << 20)
                        .build())
            .getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> TransferConfig.builder().set(TransportSettings.VERBS_CQ_SPIN_MICROS, 1L));
    assertThrows(
        IllegalArgumentException.class,
        () -> TransferConfig.builder().set(TransportSettings.AUTH_SECRET, "s"));
  }

  /**
   * The two ends of a documented range ("64k to 1g; note"), read back with the unit parser; "2g-1"
   * is one below 2g. Null for ranges that are not numeric.
   */
  static long[] documentedBounds(Setting<?> s) {
    String text = s.rangeText().split(";")[0];
    String[] ends = text.split(" to ");
    if (ends.length != 2 || !Character.isDigit(ends[0].charAt(0))) {
      return null;
    }
    boolean duration = s.defaultValue() instanceof Duration;
    long[] b = new long[2];
    for (int i = 0; i < 2; i++) {
      String e = ends[i].trim();
      long minus = 0;
      if (e.endsWith("-1")) {
        minus = 1;
        e = e.substring(0, e.length() - 2);
      }
      b[i] =
          (duration ? TransferConfig.parseTime(e).toMillis() : TransferConfig.parseBytes(e))
              - minus;
    }
    return b;
  }

  /** The text of a measure (count, bytes or milliseconds) as a value of {@code s}. */
  static String asValue(Setting<?> s, long measure) {
    return s.defaultValue() instanceof Duration ? measure + "ms" : Long.toString(measure);
  }

  @Test
  void everyDocumentedRangeIsWhatTheCheckEnforces() {
    int numeric = 0;
    for (TransferConfig.Key k : TransferConfig.KEYS.values()) {
      long[] b = documentedBounds(k.setting());
      if (b == null) {
        assertTrue(k.setting().min().isEmpty(), k.name() + " has bounds but no numeric range text");
        continue;
      }
      numeric++;
      assertEquals(b[0], k.setting().min().getAsLong(), k.name());
      assertEquals(b[1], k.setting().max().getAsLong(), k.name());
      for (long v : new long[] {b[0], b[1]}) {
        TransferConfig.fromProperties(probe(k.name(), asValue(k.setting(), v)), P);
      }
      for (long v : new long[] {b[0] - 1, b[1] + 1}) {
        String value = asValue(k.setting(), v);
        String msg = error(probe(k.name(), value));
        assertTrue(
            msg.contains(P + k.name() + "=" + value + " is out of range: " + k.range()), msg);
      }
    }
    assertEquals(18, numeric, "numeric transport keys probed");
  }

  /** {@code name=value} with the other keys set so that cross-key checks cannot interfere. */
  private static Map<String, String> probe(String name, String value) {
    Map<String, String> m =
        new HashMap<>(
            Map.of(
                P + "registrationBudget",
                "1p",
                P + "poolMaxBytes",
                "1m",
                P + "maxOutstandingBytes",
                "1g",
                P + "maxTransferSize",
                "4k"));
    m.put(P + name, value);
    return m;
  }

  @Test
  void typedBuilderSettersEnforceTheSameBounds() {
    TransferConfigBuilder b = TransferConfig.builder().prefix(P);
    assertTrue(
        assertConfigError(Problem.OUT_OF_RANGE, P + "ioThreads", () -> b.ioThreads(65))
            .getMessage()
            .contains(P + "ioThreads=65 is out of range: 1 to 64"));
    assertTrue(
        assertConfigError(
                Problem.OUT_OF_RANGE, P + "readTimeout", () -> b.readTimeout(Duration.ofMillis(99)))
            .getMessage()
            .contains(P + "readTimeout=99ms is out of range: 100ms to 1h"));
    assertTrue(
        assertConfigError(
                Problem.OUT_OF_RANGE, P + "maxTransferSize", () -> b.maxTransferSize(4095))
            .getMessage()
            .contains(P + "maxTransferSize=4095 is out of range: 4k to 64m"));
    assertEquals(64, b.ioThreads(64).build().ioThreads());
  }

  @Test
  void defaultsAreTheDeclaredOnes() {
    TransferConfig c = TransferConfig.defaults();
    assertEquals(ProviderKind.AUTO, c.provider());
    assertEquals("127.0.0.1", c.bindAddress());
    assertEquals(0, c.port());
    assertEquals(Duration.ofSeconds(10), c.connectTimeout());
    assertEquals(Duration.ofSeconds(60), c.readTimeout());
    assertEquals(Duration.ofSeconds(5), c.peerBackoff());
    assertEquals(Duration.ofMinutes(5), c.connectionIdleTimeout());
    assertEquals(64, c.maxOutstandingRequests());
    assertEquals(64L << 20, c.maxOutstandingBytes());
    assertEquals(1 << 20, c.maxTransferSize());
    assertEquals(1 << 30, c.maxSegmentSize());
    assertEquals(16L << 30, c.registrationBudget());
    assertEquals(256L << 20, c.poolMaxBytes());
    assertEquals(2, c.ioThreads());
    assertEquals(4096, c.maxConnections());
    assertEquals(Duration.ofMinutes(10), c.idleTimeout());
    assertEquals(Duration.ofSeconds(60), c.writeTimeout());
    assertTrue(c.authSecret().isEmpty() && c.device().isEmpty());
  }

  @Test
  void wildcardAndUnresolvableBindAddressesAreRefusedAtStart() {
    TransferConfig wild = TransferConfig.builder().bindAddress("0.0.0.0").build();
    assertTrue(
        assertThrows(TransferConfigException.class, wild::resolveBindAddress)
            .getMessage()
            .contains("wildcard"));
    TransferConfig bad = TransferConfig.builder().bindAddress("no-such-host.invalid").build();
    assertThrows(TransferConfigException.class, bad::resolveBindAddress);
  }

  @Test
  void everyKeyIsDocumented() {
    for (TransferConfig.Key k : TransferConfig.KEYS.values()) {
      assertTrue(
          !k.doc().isBlank() && !k.range().isBlank() && !k.defaultValue().isBlank(), k.name());
    }
  }

  @Test
  void autoFallsBackToTcpAndSaysWhyWhileVerbsIsAStartUpError() {
    ProviderSelection.Decision d = ProviderSelection.decide(TransferConfig.defaults());
    assumeTrue(d.kind() == ProviderKind.TCP, "verbs is usable here, so auto picks it: " + d);
    assertTrue(d.reason().startsWith("auto: verbs not used because"), d.reason());
    TransferConfig verbs = TransferConfig.builder().provider(ProviderKind.VERBS).build();
    TransferConfigException e =
        assertThrows(TransferConfigException.class, () -> TransferNode.start(verbs));
    assertEquals(TransferConfigException.Problem.UNUSABLE, e.problem());
    assertTrue(e.getMessage().contains("provider=verbs"), e.getMessage());
    try (TransferNode n = TransferNode.start(TransferConfig.defaults())) {
      assertEquals(ProviderKind.TCP, n.provider());
      assertEquals(d.reason(), n.selectionReason());
    }
  }

  @Test
  void ucxWithoutItsModuleIsAStartUpErrorAndAutoSaysWhyItSkippedIt() {
    ProviderSelection.Decision d = ProviderSelection.decide(TransferConfig.defaults());
    assumeTrue(d.kind() == ProviderKind.TCP, "verbs is usable here, so auto picks it: " + d);
    assertTrue(
        d.reason().contains("; ucx not used because the ucx provider (memwire-block-transfer-ucx)"),
        d.reason());
    TransferConfig ucx = TransferConfig.builder().provider(ProviderKind.UCX).build();
    TransferConfigException e =
        assertThrows(TransferConfigException.class, () -> TransferNode.start(ucx));
    assertTrue(e.getMessage().contains("provider=ucx"), e.getMessage());
    assertEquals(ProviderKind.UCX, ProviderKind.parse("provider", "UCX"));
  }

  @Test
  void fabricKeysAreCheckedAtStart() {
    TransferConfig c =
        TransferConfig.builder()
            .set("device", "mlx5_0:1")
            .set("gidIndex", "3")
            .set("trafficClass", "106")
            .set("serviceLevel", "0")
            .set("ucxTransports", "rc_verbs,ud_verbs")
            .set("ucxConfig", "MAX_RMA_RAILS=1;UCX_IB_REG_METHODS=rcache,direct")
            .build();
    assertEquals("mlx5_0:1", c.device().orElseThrow());
    assertEquals(3, c.gidIndex().orElseThrow());
    assertEquals(106, c.trafficClass().orElseThrow());
    assertEquals(0, c.serviceLevel().orElseThrow());
    for (String[] bad :
        new String[][] {
          {"device", "mlx5_0 1"}, {"ucxTransports", "rc verbs"}, {"ucxConfig", "NOEQUALS"}
        }) {
      TransferConfigException e =
          assertThrows(
              TransferConfigException.class,
              () -> TransferConfig.builder().set(bad[0], bad[1]).build(),
              bad[0]);
      assertTrue(e.getMessage().contains(bad[0]), e.getMessage());
    }
  }
}
