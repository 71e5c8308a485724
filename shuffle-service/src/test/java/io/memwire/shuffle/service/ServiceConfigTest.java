package io.memwire.shuffle.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfigException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** The service's keys: validated at start naming the key, documented from their declarations. */
class ServiceConfigTest {
  private static final String P = ServiceSettings.PREFIX;

  @Test
  void docsShowTheGeneratedTable() throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "SHUFFLE-SERVICE.md"));
    assertTrue(
        doc.contains(ServiceSettings.markdownTable()),
        "regenerate the table in docs/SHUFFLE-SERVICE.md:\n" + ServiceSettings.markdownTable());
  }

  @Test
  void theShippedTemplateParses() throws Exception {
    Properties p = new Properties();
    try (InputStream in =
        Files.newInputStream(
            Path.of("..", "conf-templates", "shuffle-service", "shuffle-service.properties"))) {
      p.load(in);
    }
    Map<String, String> m = new HashMap<>();
    p.forEach((k, v) -> m.put(k.toString(), v.toString().trim()));
    ServiceConfig c = ServiceConfig.fromProperties(m);
    assertEquals(Path.of("/run/memwire/shuffle.sock"), c.socket());
    assertEquals(Duration.ofSeconds(60), c.appTimeout());
    assertEquals(ProviderKind.AUTO, c.transfer().provider());
    assertEquals(7450, c.transfer().port());
  }

  @Test
  void theHttpEndpointIsOffByDefaultAndItsKeysAreChecked() {
    ServiceConfig off = ServiceConfig.fromProperties(Map.of());
    assertTrue(off.httpPort().isEmpty());
    assertEquals("0.0.0.0", off.httpHost());
    ServiceConfig on =
        ServiceConfig.fromProperties(Map.of(P + "http.port", "9464", P + "http.host", "127.0.0.1"));
    assertEquals(9464, on.httpPort().getAsInt());
    assertEquals("127.0.0.1", on.httpHost());
    assertEquals(
        0, ServiceConfig.fromProperties(Map.of(P + "http.port", "0")).httpPort().getAsInt());
    for (String bad : new String[] {"-1", "65536", "http", "9464x"}) {
      TransferConfigException e =
          assertThrows(
              TransferConfigException.class,
              () -> ServiceConfig.fromProperties(Map.of(P + "http.port", bad)),
              bad);
      assertEquals(P + "http.port", e.key(), e.getMessage());
    }
    for (String bad : new String[] {"", "no-such-host.invalid"}) {
      TransferConfigException e =
          assertThrows(
              TransferConfigException.class,
              () -> ServiceConfig.fromProperties(Map.of(P + "http.host", bad)),
              bad);
      assertEquals(P + "http.host", e.key(), e.getMessage());
      assertTrue(e.getMessage().contains(P + "http.host"), e.getMessage());
    }
  }

  @Test
  void defaultsServeThisUserOnASocketInTheTempDirectory() {
    ServiceConfig c = ServiceConfig.fromProperties(Map.of());
    assertEquals(ServiceClient.defaultSocket(), c.socket());
    assertEquals(java.util.Set.of(System.getProperty("user.name")), c.allowedUsers());
    assertEquals(512, c.maxClients());
  }

  @Test
  void badKeysAndValuesFailNamingTheKey() {
    assertKey(
        TransferConfigException.Problem.UNKNOWN_KEY, P + "sokcet", Map.of(P + "sokcet", "/x"));
    assertKey(
        TransferConfigException.Problem.OUT_OF_RANGE,
        P + "appTimeout",
        Map.of(P + "appTimeout", "10ms"));
    assertKey(
        TransferConfigException.Problem.MALFORMED,
        P + "maxClients",
        Map.of(P + "maxClients", "many"));
    assertKey(
        TransferConfigException.Problem.OUT_OF_RANGE,
        P + "allowedUsers",
        Map.of(P + "allowedUsers", " , "));
    assertKey(
        TransferConfigException.Problem.OUT_OF_RANGE,
        ServiceSettings.TRANSFER_PREFIX + "port",
        Map.of(ServiceSettings.TRANSFER_PREFIX + "port", "70000"));
    assertKey(
        TransferConfigException.Problem.UNKNOWN_KEY,
        ServiceSettings.TRANSFER_PREFIX + "prot",
        Map.of(ServiceSettings.TRANSFER_PREFIX + "prot", "1"));
  }

  private static void assertKey(
      TransferConfigException.Problem problem, String key, Map<String, String> props) {
    TransferConfigException e =
        assertThrows(TransferConfigException.class, () -> ServiceConfig.fromProperties(props));
    assertEquals(problem, e.problem(), e.getMessage());
    assertEquals(key, e.key(), e.getMessage());
    assertTrue(e.getMessage().contains(key), e.getMessage());
  }
}
