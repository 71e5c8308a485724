package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.ucx.UcxProviderFactory;
import java.util.Optional;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A Flight pull over the ucx provider, over UCX's tcp transport on loopback and over its
 * shared-memory transports (the server's arenas then UCX's own memory, read without the server):
 * the batches equal a plain DoGet's, pulled one-sided. Skips (with the reason) without UCX.
 */
class UcxRoundTripTest {
  private static TransferConfig ucx(String transports) {
    TransferConfigBuilder b =
        TransferConfig.builder()
            .provider(ProviderKind.UCX)
            .bindAddress("127.0.0.1")
            .set("ucxTransports", transports)
            .poolMaxBytes(8L << 20);
    if (transports.equals("tcp")) {
      b.set("ucxConfig", "NET_DEVICES=lo");
    }
    return b.build();
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "posix,sysv,cma"})
  void aPullOverUcxEqualsPlainDoGet(String transports) throws Exception {
    Optional<String> why = new UcxProviderFactory().unavailableReason(ucx(transports));
    Assumptions.assumeTrue(why.isEmpty(), () -> "ucx not available: " + why.orElse(""));
    try (Fixture f =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION,
            b -> b.trustedFabric(true),
            ucx(transports))) {
      RdmaFlightClient rdma =
          f.rdmaClient(
              f.wrappedClient(), b -> b.dataPlane(DataPlane.UCX).transferConfig(ucx(transports)));
      for (String dataset : new String[] {"ints", "strings"}) {
        FlightInfo info =
            f.wrappedClient().getInfo(org.apache.arrow.flight.FlightDescriptor.path(dataset));
        FlightEndpoint endpoint = info.getEndpoints().get(0);
        assertTrue(
            endpoint.getLocations().stream()
                .anyMatch(l -> l.getUri().getScheme().equals(RdmaLocations.UCX_SCHEME)),
            endpoint.getLocations().toString());
        try (var plain = f.plainClient().getStream(endpoint.getTicket());
            var pulled = rdma.getStream(endpoint)) {
          assertEquals(DataPlane.UCX, pulled.dataPlane(), "fallback: " + pulled.fallbackReason());
          int batches = 0;
          while (plain.next()) {
            assertTrue(pulled.next(), "the pulled stream ended early");
            assertTrue(plain.getRoot().equals(pulled.getRoot()), "batch " + batches + " differs");
            batches++;
          }
          assertTrue(!pulled.next() && batches > 0, dataset + ": " + batches + " batches");
        }
      }
      f.awaitServerIdle();
    }
  }
}
