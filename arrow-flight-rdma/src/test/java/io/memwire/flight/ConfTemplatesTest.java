package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.TransferConfig;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.Location;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/** The shipped conf-templates/flight files load, and bad values name their key. */
class ConfTemplatesTest {
  private static final Path DIR = Path.of("..", "conf-templates", "flight");

  static Map<String, String> load(String file) throws Exception {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(DIR.resolve(file))) {
      p.load(r);
    }
    Map<String, String> m = new HashMap<>();
    p.stringPropertyNames().forEach(k -> m.put(k, p.getProperty(k)));
    return m;
  }

  @Test
  void clientTemplatesLoad() throws Exception {
    for (String f : new String[] {"client-tcp.properties", "client-verbs.properties"}) {
      Map<String, String> m = load(f);
      TransferConfig c = TransferConfig.fromProperties(m, RdmaFlightClient.TRANSFER_PREFIX);
      assertTrue(c.readTimeout().toSeconds() == 60, f);
      try (RootAllocator a = new RootAllocator();
          FlightClient fc =
              FlightClient.builder(a, Location.forGrpcInsecure("127.0.0.1", 1)).build();
          RdmaFlightClient rc = RdmaFlightClient.builder(fc, a).properties(m).build()) {
        assertEquals(DataPlane.AUTO, rc.dataPlane(), f);
      }
    }
  }

  @Test
  void serverTemplateLoadsAndBadValuesNameTheirKey() throws Exception {
    Map<String, String> m = load("server.properties");
    try (io.memwire.transfer.TransferNode node =
            io.memwire.transfer.TransferNode.start(
                TransferConfig.builder().provider(io.memwire.transfer.ProviderKind.TCP).build());
        RootAllocator a = new RootAllocator()) {
      RdmaFlightProducer.Builder b =
          RdmaFlightProducer.builder(new org.apache.arrow.flight.NoOpFlightProducer(), node, a);
      b.properties(m);
      m.put("memwire.flight.server.compression", "snappy");
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> b.properties(m));
      assertTrue(
          e.getMessage().contains("memwire.flight.server.compression=snappy"), e.getMessage());
      Map<String, String> typo = Map.of("memwire.flight.server.leaseTimout", "5s");
      e = assertThrows(IllegalArgumentException.class, () -> b.properties(typo));
      assertTrue(
          e.getMessage().contains("unknown configuration key memwire.flight.server.leaseTimout"),
          e.getMessage());
    }
  }
}
