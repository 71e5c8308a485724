package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.ucx.UcxProviderFactory;
import java.util.Optional;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A Flight pull over the ucx provider (UCX's tcp transport on loopback): the batches equal a plain
 * DoGet's, pulled one-sided. Skips (with the reason) without UCX.
 */
class UcxRoundTripTest {
  private static TransferConfig ucx() {
    return TransferConfig.builder()
        .provider(ProviderKind.UCX)
        .bindAddress("127.0.0.1")
        .set("ucxTransports", "tcp")
        .set("ucxConfig", "NET_DEVICES=lo")
        .poolMaxBytes(8L << 20)
        .build();
  }

  @Test
  void aPullOverUcxEqualsPlainDoGet() throws Exception {
    Optional<String> why = new UcxProviderFactory().unavailableReason(ucx());
    Assumptions.assumeTrue(why.isEmpty(), () -> "ucx not available: " + why.orElse(""));
    try (Fixture f =
        new Fixture(CompressionUtil.CodecType.NO_COMPRESSION, b -> b.trustedFabric(true), ucx())) {
      RdmaFlightClient rdma =
          f.rdmaClient(f.wrappedClient(), b -> b.dataPlane(DataPlane.UCX).transferConfig(ucx()));
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
