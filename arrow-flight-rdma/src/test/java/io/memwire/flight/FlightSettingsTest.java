package io.memwire.flight;

import static io.memwire.transfer.ConfigErrors.assertConfigError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferConfigException.Problem;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.settings.Setting;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * docs/FLIGHT.md shows exactly the table FlightSettings generates; the client and server builders
 * enforce each numeric key's documented range, and refuse unknown keys, naming the key.
 */
class FlightSettingsTest {
  private static RootAllocator allocator;
  private static FlightClient flight;
  private static TransferNode node;

  @BeforeAll
  static void start() {
    allocator = new RootAllocator();
    flight = FlightClient.builder(allocator, Location.forGrpcInsecure("127.0.0.1", 1)).build();
    node = TransferNode.start(TransferConfig.builder().provider(ProviderKind.TCP).build());
  }

  @AfterAll
  static void stop() throws Exception {
    flight.close();
    node.close();
    allocator.close();
  }

  @Test
  void docsShowTheGeneratedTable() throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "FLIGHT.md"));
    assertTrue(
        doc.contains(FlightSettings.markdownTable()),
        "regenerate the table in docs/FLIGHT.md with: java -cp ... "
            + "io.memwire.flight.FlightSettings\n"
            + FlightSettings.markdownTable());
  }

  @Test
  void publicKeyConstantsAreTheDeclaredNames() {
    assertEquals(
        FlightSettings.CLIENT_PREFIX + FlightSettings.DATA_PLANE.name(), DataPlane.PROPERTY);
    assertEquals(
        FlightSettings.CLIENT_PREFIX + FlightSettings.WINDOW_BATCHES.name(),
        RdmaFlightClient.WINDOW_BATCHES_PROPERTY);
    assertEquals(
        FlightSettings.CLIENT_PREFIX + FlightSettings.WINDOW_BYTES.name(),
        RdmaFlightClient.WINDOW_BYTES_PROPERTY);
  }

  @Test
  void clientNumericKeysEnforceTheirDocumentedRange() {
    probe(FlightSettings.CLIENT_PREFIX, FlightSettings.CLIENT, this::client, 2);
  }

  @Test
  void serverNumericKeysEnforceTheirDocumentedRange() {
    probe(FlightSettings.SERVER_PREFIX, FlightSettings.SERVER, this::server, 6);
  }

  /** For each numeric setting: min and max accepted, min-1 and max+1 refused naming the key. */
  private static void probe(
      String prefix,
      List<Setting<?>> settings,
      Consumer<Map<String, String>> apply,
      int expectedNumeric) {
    int numeric = 0;
    for (Setting<?> s : settings) {
      if (s.min().isEmpty()) {
        continue;
      }
      numeric++;
      String key = prefix + s.name();
      boolean millis = s.defaultValue() instanceof Duration;
      // The documented range text, read back with the unit parser, is the enforced one.
      String[] ends = s.rangeText().split(";")[0].split(" to ");
      long min =
          millis
              ? TransferConfig.parseTime(ends[0]).toMillis()
              : TransferConfig.parseBytes(ends[0]);
      long max =
          millis
              ? TransferConfig.parseTime(ends[1]).toMillis()
              : TransferConfig.parseBytes(ends[1]);
      assertEquals(s.min().getAsLong(), min, key);
      assertEquals(s.max().getAsLong(), max, key);
      String unit = millis ? "ms" : "";
      apply.accept(Map.of(key, min + unit));
      apply.accept(Map.of(key, max + unit));
      for (long v : new long[] {min - 1, max + 1}) {
        TransferConfigException e =
            assertConfigError(Problem.OUT_OF_RANGE, key, () -> apply.accept(Map.of(key, v + unit)));
        assertTrue(
            e.getMessage().contains(key + "=" + v + unit + " is out of range: " + s.rangeText()),
            e.getMessage());
      }
    }
    assertEquals(expectedNumeric, numeric, "numeric settings probed");
  }

  private void client(Map<String, String> p) {
    try (RdmaFlightClient c = RdmaFlightClient.builder(flight, allocator).properties(p).build()) {
      p.forEach(
          (k, v) -> {
            if (k.equals(RdmaFlightClient.WINDOW_BATCHES_PROPERTY)) {
              assertEquals(Long.parseLong(v), c.windowBatches());
            } else if (k.equals(RdmaFlightClient.WINDOW_BYTES_PROPERTY)) {
              assertEquals(Long.parseLong(v), c.windowBytes());
            }
          });
    }
  }

  private void server(Map<String, String> p) {
    RdmaFlightProducer.builder(new NoOpFlightProducer(), node, allocator).properties(p);
  }

  @Test
  void clientReadsDefaultsAndValuesAndRefusesUnknownKeys() {
    try (RdmaFlightClient c = RdmaFlightClient.builder(flight, allocator).build()) {
      assertEquals(DataPlane.AUTO, c.dataPlane());
      assertEquals(32, c.windowBatches());
      assertEquals(128L << 20, c.windowBytes());
    }
    Map<String, String> p = new HashMap<>();
    p.put("memwire.flight.dataPlane", " TCP ");
    p.put("memwire.flight.windowBytes", "1m");
    // Server and transfer keys in the same file are left to their readers.
    p.put("memwire.flight.server.maxExchanges", "8");
    p.put("memwire.flight.transfer.readTimeout", "30s");
    try (RdmaFlightClient c = RdmaFlightClient.builder(flight, allocator).properties(p).build()) {
      assertEquals(DataPlane.TCP, c.dataPlane());
      assertEquals(32, c.windowBatches());
      assertEquals(1L << 20, c.windowBytes());
    }
    assertConfigError(
        Problem.MALFORMED,
        "memwire.flight.dataPlane",
        () -> client(Map.of("memwire.flight.dataPlane", "rdma")));
    assertConfigError(
        Problem.UNKNOWN_KEY,
        "memwire.flight.windowBatchs",
        () -> client(Map.of("memwire.flight.windowBatchs", "4")));
    assertConfigError(
        Problem.MALFORMED,
        "memwire.flight.windowBytes",
        () -> client(Map.of("memwire.flight.windowBytes", "lots")));
    assertConfigError(
        Problem.UNKNOWN_KEY,
        "memwire.flight.transfer.readTimeot",
        () -> client(Map.of("memwire.flight.transfer.readTimeot", "4s")));
  }

  @Test
  void clientSystemPropertiesAreReadAndUnknownOnesRefused() {
    String good = RdmaFlightClient.WINDOW_BATCHES_PROPERTY;
    String typo = "memwire.flight.windowBytez";
    try {
      System.setProperty(good, "7");
      try (RdmaFlightClient c = RdmaFlightClient.builder(flight, allocator).build()) {
        assertEquals(7, c.windowBatches());
      }
      System.setProperty(good, "0");
      assertConfigError(
          Problem.OUT_OF_RANGE, good, () -> RdmaFlightClient.builder(flight, allocator).build());
      System.clearProperty(good);
      System.setProperty(typo, "1m");
      assertConfigError(
          Problem.UNKNOWN_KEY, typo, () -> RdmaFlightClient.builder(flight, allocator).build());
    } finally {
      System.clearProperty(good);
      System.clearProperty(typo);
    }
  }

  @Test
  void serverKeysAreReadAndUnknownOnesRefused() {
    RdmaFlightProducer.Builder b =
        RdmaFlightProducer.builder(new NoOpFlightProducer(), node, allocator);
    b.properties(
        Map.of(
            "memwire.flight.server.compression",
            "LZ4",
            "memwire.flight.server.leaseTimeout",
            "2s",
            "memwire.flight.server.maxExchanges",
            "3",
            "memwire.flight.server.maxWindowBatches",
            "5",
            "memwire.flight.server.trustedFabric",
            "TRUE",
            "memwire.flight.server.bodyChecksum",
            "true"));
    AtomicReference<ServerResources> opened = new AtomicReference<>();
    b.onOpened = opened::set;
    RdmaFlightProducer configured = b.build();
    try {
      ServerResources r = opened.get();
      assertTrue(r.bodyChecksum());
      assertEquals(Duration.ofSeconds(2), r.leaseTimeout());
      assertEquals(3, r.maxExchanges());
      assertEquals(5, r.maxWindowBatches());
      assertEquals(256L << 20, r.maxWindowBytes());
      assertTrue(r.codec().getCodecType() == CompressionUtil.CodecType.LZ4_FRAME);
    } finally {
      configured.close();
    }
    assertEquals(
        CompressionUtil.CodecType.NO_COMPRESSION, FlightSettings.COMPRESSION.defaultValue());
    RdmaFlightProducer.Builder plain =
        RdmaFlightProducer.builder(new NoOpFlightProducer(), node, allocator);
    plain.onOpened = opened::set;
    RdmaFlightProducer byDefault = plain.build();
    try {
      assertFalse(opened.get().bodyChecksum(), "the body checksum is off by default");
    } finally {
      byDefault.close();
    }
    assertConfigError(
        Problem.MALFORMED,
        "memwire.flight.server.bodyChecksum",
        () -> server(Map.of("memwire.flight.server.bodyChecksum", "sometimes")));
    assertConfigError(
        Problem.UNKNOWN_KEY,
        "memwire.flight.server.maxExchange",
        () -> server(Map.of("memwire.flight.server.maxExchange", "3")));
    TransferConfigException e =
        assertConfigError(
            Problem.OUT_OF_RANGE,
            "memwire.flight.server.maxExchanges",
            () ->
                RdmaFlightProducer.builder(new NoOpFlightProducer(), node, allocator)
                    .maxExchanges(10_001));
    // The message quotes the value as given and the declared range.
    assertTrue(e.getMessage().contains("=10001 is out of range: 1 to 10000"), e.getMessage());
    e =
        assertConfigError(
            Problem.OUT_OF_RANGE,
            "memwire.flight.server.leaseTimeout",
            () ->
                RdmaFlightProducer.builder(new NoOpFlightProducer(), node, allocator)
                    .leaseTimeout(Duration.ofMillis(9)));
    assertTrue(e.getMessage().contains("=9ms is out of range: 10ms to 24h"), e.getMessage());
  }
}
