package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Every reason auto takes plain DoGet, and that it then still returns the right data. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FallbackTest {
  private Fixture f;

  @BeforeAll
  void start() throws Exception {
    f = new Fixture(CompressionUtil.CodecType.NO_COMPRESSION);
  }

  @AfterAll
  void stop() throws Exception {
    f.close();
  }

  private FlightStream plain(String ticket) {
    return f.plainClient().getStream(TestProducer.ticket(ticket));
  }

  /** Reads both and asserts equal data and the data plane the stream ended up on. */
  private RdmaFlightStream check(RdmaFlightStream s, String ticket, DataPlane expected)
      throws Exception {
    try (FlightStream e = plain(ticket)) {
      assertEquals(e.getSchema(), s.getSchema());
      assertEquals(expected, s.dataPlane(), "fallback reason: " + s.fallbackReason());
      int n = 0;
      while (e.next()) {
        assertTrue(s.next());
        assertTrue(e.getRoot().equals(s.getRoot()), "batch " + n);
        n++;
      }
      assertTrue(n > 0);
      assertEquals(false, s.next());
    } finally {
      s.close();
    }
    return s;
  }

  @Test
  void autoUsesRdmaWhenOffered() throws Exception {
    RdmaFlightClient c = f.rdmaClient(f.wrappedClient(), b -> b.dataPlane(DataPlane.AUTO));
    FlightEndpoint e =
        f.wrappedClient().getInfo(FlightDescriptor.path("ints")).getEndpoints().get(0);
    RdmaFlightStream s = check(c.getStream(e), "ints", DataPlane.TCP);
    assertNull(s.fallback());
    assertNull(s.fallbackReason());
  }

  @Test
  void optionOffBySystemProperty() throws Exception {
    withDataPlaneProperty(
        "grpc",
        () -> {
          RdmaFlightClient c = f.rdmaClient(f.wrappedClient(), b -> {});
          assertEquals(DataPlane.GRPC, c.dataPlane());
          FlightEndpoint e =
              f.wrappedClient().getInfo(FlightDescriptor.path("ints")).getEndpoints().get(0);
          check(c.getStream(e), "ints", DataPlane.GRPC);
          assertEquals(0, f.rdma.stats().get("activeSessions"));
        });
  }

  @Test
  void badSystemPropertyNamesKeyAndValue() throws Exception {
    withDataPlaneProperty(
        "infiniband",
        () -> {
          IllegalArgumentException ex =
              assertThrows(
                  IllegalArgumentException.class,
                  () -> RdmaFlightClient.builder(f.wrappedClient(), f.clientAllocator).build());
          assertTrue(ex.getMessage().contains(DataPlane.PROPERTY + "=infiniband"), ex.getMessage());
        });
  }

  @Test
  void endpointWithoutRdmaLocation() throws Exception {
    RdmaFlightClient c = f.rdmaClient(f.plainClient(), b -> b.dataPlane(DataPlane.AUTO));
    FlightEndpoint e =
        f.plainClient().getInfo(FlightDescriptor.path("strings")).getEndpoints().get(0);
    RdmaFlightStream s = check(c.getStream(e), "strings", DataPlane.GRPC);
    assertEquals(FallbackReason.NO_LOCATION, s.fallback());
    assertTrue(
        s.fallbackReason().contains("no rdma://, rdma+tcp:// or rdma+ucx:// location"),
        s.fallbackReason());
  }

  @Test
  void serverWithoutWrapper() throws Exception {
    // A bare ticket: nothing says whether the server has the wrapper; the exchange is refused.
    RdmaFlightClient c = f.rdmaClient(f.plainClient(), b -> b.dataPlane(DataPlane.AUTO));
    RdmaFlightStream s = check(c.getStream(TestProducer.ticket("list")), "list", DataPlane.GRPC);
    assertEquals(FallbackReason.NOT_SERVED, s.fallback(), s.fallbackReason());
  }

  @Test
  void transportUnreachable() throws Exception {
    int closedPort;
    try (ServerSocket ss = new ServerSocket(0)) {
      closedPort = ss.getLocalPort();
    }
    Ticket t = TestProducer.ticket("struct");
    FlightEndpoint e =
        new FlightEndpoint(
            t,
            f.plainLocation(),
            RdmaLocations.of(ProviderKind.TCP, new InetSocketAddress("127.0.0.1", closedPort)));
    RdmaFlightClient c = f.rdmaClient(f.plainClient(), b -> b.dataPlane(DataPlane.AUTO));
    RdmaFlightStream s = check(c.getStream(e), "struct", DataPlane.GRPC);
    assertEquals(FallbackReason.TRANSPORT, s.fallback(), s.fallbackReason());
    assertTrue(s.fallbackReason().contains("tcp transport is unavailable"), s.fallbackReason());
  }

  @Test
  void verbsUnavailable() throws Exception {
    // No RDMA device on this machine: the verbs node cannot start.
    Ticket t = TestProducer.ticket("map");
    FlightEndpoint e =
        new FlightEndpoint(
            t,
            f.plainLocation(),
            RdmaLocations.of(ProviderKind.VERBS, new InetSocketAddress("127.0.0.1", 7471)));
    RdmaFlightClient c = f.rdmaClient(f.plainClient(), b -> b.dataPlane(DataPlane.AUTO));
    RdmaFlightStream s = c.getStream(e);
    org.junit.jupiter.api.Assumptions.assumeTrue(
        s.dataPlane() == DataPlane.GRPC,
        "verbs is usable here; this test covers machines without it");
    assertEquals(FallbackReason.TRANSPORT, s.fallback(), s.fallbackReason());
    assertTrue(s.fallbackReason().contains("verbs transport is unavailable"), s.fallbackReason());
    check(s, "map", DataPlane.GRPC);
  }

  @Test
  void explicitTcpWithoutLocationFails() {
    RdmaFlightClient c = f.rdmaClient(f.plainClient(), b -> b.dataPlane(DataPlane.TCP));
    FlightEndpoint e = new FlightEndpoint(TestProducer.ticket("ints"), f.plainLocation());
    FlightRuntimeException ex = assertThrows(FlightRuntimeException.class, () -> c.getStream(e));
    assertEquals(FlightStatusCode.UNAVAILABLE, ex.status().code());
    assertEquals(FallbackReason.NO_LOCATION, FallbackReason.of(ex));
    assertTrue(ex.getMessage().contains("no rdma+tcp:// location"), ex.getMessage());
  }

  @Test
  void retryOverGrpcWhenFirstReadFails() throws Exception {
    // A second wrapped server whose transfer node is gone: the exchange starts, the server cannot
    // lease the first batch, no batch was handed out yet, so the stream quietly re-opens over
    // DoGet.
    try (Fixture broken = new Fixture(CompressionUtil.CodecType.NO_COMPRESSION)) {
      RdmaFlightClient c =
          broken.rdmaClient(broken.wrappedClient(), b -> b.dataPlane(DataPlane.AUTO));
      InetSocketAddress transfer = broken.node.localAddress();
      broken.node.close();
      RdmaFlightStream s = c.getStream(TestProducer.ticket("decimal"));
      try (FlightStream e = broken.plainClient().getStream(TestProducer.ticket("decimal"))) {
        int n = 0;
        while (e.next()) {
          assertTrue(s.next());
          assertTrue(e.getRoot().equals(s.getRoot()));
          n++;
        }
        assertTrue(n > 0);
        assertEquals(DataPlane.GRPC, s.dataPlane());
        assertEquals(FallbackReason.LEASE_FAILED, s.fallback(), s.fallbackReason());
      } finally {
        s.close();
      }
      assertNotNull(transfer);
    }
  }

  @Test
  void retryOverGrpcWhenTransportRefusesClient() throws Exception {
    // The server's transfer node wants a secret this client does not have: the exchange starts,
    // the first read cannot connect, and the stream re-opens over DoGet.
    try (Fixture guarded =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION,
            b -> {},
            io.memwire.transfer.TransferConfig.builder()
                .provider(ProviderKind.TCP)
                .authSecret("server-only")
                .build())) {
      RdmaFlightClient c =
          guarded.rdmaClient(guarded.wrappedClient(), b -> b.dataPlane(DataPlane.AUTO));
      RdmaFlightStream s = c.getStream(TestProducer.ticket("union"));
      try (FlightStream e = guarded.plainClient().getStream(TestProducer.ticket("union"))) {
        int n = 0;
        while (e.next()) {
          assertTrue(s.next());
          assertTrue(e.getRoot().equals(s.getRoot()));
          n++;
        }
        assertTrue(n > 0);
        assertEquals(DataPlane.GRPC, s.dataPlane());
        assertEquals(FallbackReason.TRANSPORT, s.fallback(), s.fallbackReason());
      } finally {
        s.close();
      }
      guarded.awaitServerIdle();
    }
  }

  /** Runs {@code body} with the data-plane system property set, restoring it afterwards. */
  private static void withDataPlaneProperty(String value, ThrowingRunnable body) throws Exception {
    String old = System.setProperty(DataPlane.PROPERTY, value);
    try {
      body.run();
    } finally {
      if (old == null) {
        System.clearProperty(DataPlane.PROPERTY);
      } else {
        System.setProperty(DataPlane.PROPERTY, old);
      }
    }
  }

  private interface ThrowingRunnable {
    void run() throws Exception;
  }
}
