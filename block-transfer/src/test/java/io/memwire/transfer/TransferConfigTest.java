package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TransferConfigTest {
  private static final String P = "spark.shuffle.rdma.";

  private static String error(Map<String, String> props) {
    return assertThrows(TransferConfigException.class,
        () -> TransferConfig.fromProperties(props, P)).getMessage();
  }

  @Test
  void readsEveryKeyWithUnitsAndPrefix() {
    TransferConfig c = TransferConfig.fromProperties(Map.ofEntries(
        Map.entry(P + "provider", "TCP"),
        Map.entry(P + "bindAddress", "127.0.0.1"),
        Map.entry(P + "port", "7077"),
        Map.entry(P + "connectTimeout", "3s"),
        Map.entry(P + "readTimeout", "2min"),
        Map.entry(P + "maxOutstandingRequests", "32"),
        Map.entry(P + "maxOutstandingBytes", "16m"),
        Map.entry(P + "maxTransferSize", "256k"),
        Map.entry(P + "maxSegmentSize", "1g"),
        Map.entry(P + "registrationBudget", "2g"),
        Map.entry(P + "poolMaxBytes", "64m"),
        Map.entry(P + "ioThreads", "4"),
        Map.entry(P + "authSecret", "x"),
        Map.entry("spark.other", "not under the prefix: ignored")), P);
    assertEquals(ProviderKind.TCP, c.provider());
    assertEquals(7077, c.port());
    assertEquals(Duration.ofSeconds(3), c.connectTimeout());
    assertEquals(Duration.ofMinutes(2), c.readTimeout());
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
    assertTrue(error(Map.of(P + "maxOutstandingRequests", "0"))
        .contains(P + "maxOutstandingRequests"));
    assertTrue(error(Map.of(P + "ioThreads", "1000")).contains(P + "ioThreads"));
    assertTrue(error(Map.of(P + "authSecret", "")).contains(P + "authSecret"));
    assertTrue(error(Map.of(P + "maxTransferSize", "64m", P + "maxOutstandingBytes", "1m"))
        .contains(P + "maxTransferSize"));
    assertTrue(error(Map.of(P + "poolMaxBytes", "4g", P + "registrationBudget", "1g"))
        .contains(P + "poolMaxBytes"));
    assertTrue(error(Map.of(P + "readTimout", "5s")).contains("unknown configuration key "
        + P + "readTimout"), "a misspelt key is refused, not ignored");
  }

  @Test
  void wildcardAndUnresolvableBindAddressesAreRefusedAtStart() {
    TransferConfig wild = TransferConfig.builder().bindAddress("0.0.0.0").build();
    assertTrue(assertThrows(TransferConfigException.class, wild::resolveBindAddress)
        .getMessage().contains("wildcard"));
    TransferConfig bad = TransferConfig.builder().bindAddress("no-such-host.invalid").build();
    assertThrows(TransferConfigException.class, bad::resolveBindAddress);
  }

  @Test
  void everyKeyIsDocumented() {
    for (TransferConfig.Key k : TransferConfig.KEYS.values()) {
      assertTrue(!k.doc().isBlank() && !k.range().isBlank() && !k.defaultValue().isBlank(), k.name());
    }
  }

  @Test
  void autoFallsBackToTcpAndSaysWhyWhileVerbsIsAStartUpError() {
    ProviderSelection.Decision d = ProviderSelection.decide(TransferConfig.defaults());
    if (d.kind() == ProviderKind.TCP) {
      assertTrue(d.reason().startsWith("auto: verbs not used because"), d.reason());
      TransferConfig verbs = TransferConfig.builder().provider(ProviderKind.VERBS).build();
      TransferConfigException e = assertThrows(TransferConfigException.class,
          () -> TransferNode.start(verbs));
      assertTrue(e.getMessage().contains("provider=verbs"), e.getMessage());
      try (TransferNode n = TransferNode.start(TransferConfig.defaults())) {
        assertEquals(ProviderKind.TCP, n.provider());
        assertEquals(d.reason(), n.selectionReason());
      }
    }
  }
}
