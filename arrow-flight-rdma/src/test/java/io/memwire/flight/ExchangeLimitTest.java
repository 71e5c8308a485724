package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.flight.wire.ServerMessage;
import io.memwire.transfer.ProviderKind;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The server's cap on RDMA exchanges running at once ({@code maxExchanges}): past it an exchange is
 * refused with RESOURCE_EXHAUSTED naming the setting, an auto client takes DoGet, and the server's
 * exchange threads stay within the cap. Also the verbs refusal and the new settings.
 */
class ExchangeLimitTest {
  private static final int CAP = 2;
  private Fixture f;

  @BeforeEach
  void start() throws Exception {
    f =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION,
            b -> b.maxExchanges(CAP).leaseTimeout(Duration.ofSeconds(30)));
  }

  @AfterEach
  void stop() throws Exception {
    f.close();
  }

  /** Live threads of the wrapped producer's exchange pool. */
  private static int exchangeThreads() {
    int n = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive() && t.getName().matches("memwire-flight-\\d+-exchange-\\d+")) {
        n++;
      }
    }
    return n;
  }

  private static void readAll(RdmaFlightStream s, int batches, int rows) {
    int b = 0;
    while (s.next()) {
      BigIntVector v = (BigIntVector) s.getRoot().getVector(0);
      assertEquals(rows, v.getValueCount());
      assertEquals(TestProducer.value(b, rows - 1), v.get(rows - 1));
      b++;
    }
    assertEquals(batches, b);
  }

  @Test
  void exchangesPastTheCapAreRefusedClearlyAndThreadsStayBounded() throws Exception {
    RawExchange a =
        new RawExchange(f.wrappedClient(), f.clientAllocator, "many:50:20000", 1, 1L << 30);
    RawExchange b =
        new RawExchange(
            f.client(f.rdmaGrpcLocation()), f.clientAllocator, "many:50:20000", 1, 1L << 30);
    assertEquals(ServerMessage.BATCH, a.next().kind());
    assertEquals(ServerMessage.BATCH, b.next().kind());
    assertEquals(CAP, f.stat("activeSessions"));

    try (RawExchange c =
        new RawExchange(
            f.client(f.rdmaGrpcLocation()), f.clientAllocator, "many:1:100", 1, 1L << 30)) {
      FlightRuntimeException ex = assertThrows(FlightRuntimeException.class, c::next);
      assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, ex.status().code());
      assertEquals(FallbackReason.AT_CAPACITY, FallbackReason.of(ex));
      assertTrue(ex.getMessage().contains("memwire.flight.server.maxExchanges=2"), ex.getMessage());
    }
    // An auto client still gets its stream, over DoGet, and says why.
    RdmaFlightClient auto = f.rdmaClient(f.wrappedClient(), o -> o.dataPlane(DataPlane.AUTO));
    FlightEndpoint e =
        f.wrappedClient().getInfo(FlightDescriptor.path("many:3:1000")).getEndpoints().get(0);
    try (RdmaFlightStream s = auto.getStream(e)) {
      readAll(s, 3, 1000);
      assertEquals(DataPlane.GRPC, s.dataPlane());
      assertEquals(FallbackReason.AT_CAPACITY, s.fallback(), s.fallbackReason());
      assertTrue(s.fallbackReason().contains("maxExchanges"), s.fallbackReason());
    }
    // A client that insists on the data plane gets the refusal.
    RdmaFlightClient tcp = f.rdmaClient(f.wrappedClient(), o -> o.dataPlane(DataPlane.TCP));
    FlightRuntimeException ex =
        assertThrows(
            FlightRuntimeException.class,
            () -> {
              try (RdmaFlightStream s = tcp.getStream(e)) {
                readAll(s, 3, 1000);
              }
            });
    assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, ex.status().code());
    assertTrue(exchangeThreads() <= CAP, "exchange threads: " + exchangeThreads());
    assertEquals(3, f.stat("sessionsRefused"), "c, the auto client and the tcp client");

    a.rw.getReader().cancel("done", null);
    b.rw.getReader().cancel("done", null);
    f.awaitServerIdle();
    a.close();
    b.close();
    // With the slots free again the data plane serves.
    try (RdmaFlightStream s = tcp.getStream(e)) {
      readAll(s, 3, 1000);
      assertEquals(DataPlane.TCP, s.dataPlane());
    }
  }

  @Test
  void manyConcurrentStreamsAllCompleteWithBoundedThreads() throws Exception {
    int streams = 8;
    RdmaFlightClient auto =
        f.rdmaClient(f.wrappedClient(), o -> o.dataPlane(DataPlane.AUTO).window(2, 1L << 30));
    FlightEndpoint e =
        f.wrappedClient().getInfo(FlightDescriptor.path("many:20:5000")).getEndpoints().get(0);
    AtomicBoolean sampling = new AtomicBoolean(true);
    AtomicInteger peak = new AtomicInteger();
    Thread sampler =
        new Thread(
            () -> {
              while (sampling.get()) {
                peak.accumulateAndGet(exchangeThreads(), Math::max);
                try {
                  Thread.sleep(2);
                } catch (InterruptedException ie) {
                  return;
                }
              }
            },
            "exchange-thread-sampler");
    sampler.setDaemon(true);
    sampler.start();
    ExecutorService pool = Executors.newFixedThreadPool(streams);
    List<Future<DataPlane>> done = new ArrayList<>();
    try {
      for (int i = 0; i < streams; i++) {
        done.add(
            pool.submit(
                () -> {
                  try (RdmaFlightStream s = auto.getStream(e)) {
                    readAll(s, 20, 5000);
                    return s.dataPlane();
                  }
                }));
      }
      int rdma = 0;
      for (Future<DataPlane> d : done) {
        if (d.get(60, TimeUnit.SECONDS) == DataPlane.TCP) {
          rdma++;
        }
      }
      assertTrue(rdma >= 1, "at least one stream used the data plane");
      assertEquals(
          streams,
          rdma + f.stat("sessionsRefused"),
          "every stream either ran on the data plane or was refused and used DoGet");
    } finally {
      sampling.set(false);
      sampler.join(10_000);
      pool.shutdown();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    }
    assertTrue(peak.get() <= CAP, "peak exchange threads " + peak.get() + " > cap " + CAP);
    f.awaitServerIdle();
  }

  @Test
  void verbsServesOnlyOnATrustedFabric() {
    String why = FabricTrust.refusal(ProviderKind.VERBS, false);
    assertNotNull(why);
    assertTrue(why.contains("memwire.flight.server.trustedFabric=true"), why);
    assertNull(FabricTrust.refusal(ProviderKind.VERBS, true));
    assertNull(FabricTrust.refusal(ProviderKind.TCP, false));
  }

  @Test
  void anUntrustedVerbsFabricGetsNoDataPlane() throws Exception {
    // The node is tcp; the seam makes the producer decide as it does for provider verbs.
    try (Fixture v =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION, b -> b.policyProvider = ProviderKind.VERBS)) {
      FlightEndpoint e =
          v.wrappedClient().getInfo(FlightDescriptor.path("many:2:1000")).getEndpoints().get(0);
      assertTrue(
          e.getLocations().stream().noneMatch(l -> l.getUri().getScheme().startsWith("rdma")),
          "no data-plane location: " + e.getLocations());
      RdmaFlightClient auto = v.rdmaClient(v.wrappedClient(), o -> o.dataPlane(DataPlane.AUTO));
      try (RdmaFlightStream s = auto.getStream(e)) {
        readAll(s, 2, 1000);
        assertEquals(DataPlane.GRPC, s.dataPlane());
        assertEquals(FallbackReason.NO_LOCATION, s.fallback(), s.fallbackReason());
      }
      try (RawExchange x =
          new RawExchange(v.wrappedClient(), v.clientAllocator, "many:1:100", 1, 1L << 30)) {
        FlightRuntimeException ex = assertThrows(FlightRuntimeException.class, x::next);
        assertEquals(FlightStatusCode.UNAVAILABLE, ex.status().code());
        assertEquals(FallbackReason.NOT_SERVED, FallbackReason.of(ex));
        assertTrue(
            ex.getMessage().contains("memwire.flight.server.trustedFabric=true"), ex.getMessage());
      }
      assertEquals(0, v.stat("sessionsStarted"));
    }
    try (Fixture t =
        new Fixture(
            CompressionUtil.CodecType.NO_COMPRESSION,
            b -> b.trustedFabric(true).policyProvider = ProviderKind.VERBS)) {
      FlightEndpoint e =
          t.wrappedClient().getInfo(FlightDescriptor.path("many:2:1000")).getEndpoints().get(0);
      RdmaFlightClient auto = t.rdmaClient(t.wrappedClient(), o -> o.dataPlane(DataPlane.AUTO));
      try (RdmaFlightStream s = auto.getStream(e)) {
        readAll(s, 2, 1000);
        assertEquals(DataPlane.TCP, s.dataPlane(), "a trusted fabric gets the data plane");
      }
    }
  }

  @Test
  void newSettingsAreValidatedNamingTheKey() {
    RdmaFlightProducer.Builder b =
        RdmaFlightProducer.builder(f.producer, f.node, f.serverAllocator);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> b.properties(Map.of("memwire.flight.server.maxExchanges", "0")));
    assertTrue(e.getMessage().contains("memwire.flight.server.maxExchanges"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> b.properties(Map.of("memwire.flight.server.trustedFabric", "yes")));
    assertTrue(e.getMessage().contains("memwire.flight.server.trustedFabric"), e.getMessage());
    b.properties(
        Map.of(
            "memwire.flight.server.maxExchanges",
            "5",
            "memwire.flight.server.trustedFabric",
            "true"));
  }
}
