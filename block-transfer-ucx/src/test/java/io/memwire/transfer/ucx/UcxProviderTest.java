package io.memwire.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ProviderSelection;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.verbs.MemlockLimit;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the contract suite does not cover: authentication, selection, idle cost, settings. */
class UcxProviderTest {
  private final List<TransferNode> nodes = new ArrayList<>();

  @BeforeAll
  static void ucxLoads() {
    UcxTestSupport.assumeUcx();
  }

  @AfterEach
  void closeNodes() {
    nodes.forEach(TransferNode::close);
    nodes.clear();
    assertTrue(UcxResources.allReleased(), UcxResources.describe());
  }

  private static TransferConfigBuilder ucx() {
    return TransferConfig.builder()
        .provider(ProviderKind.UCX)
        .bindAddress("127.0.0.1")
        .set("ucxTransports", "tcp")
        .set("ucxConfig", "NET_DEVICES=lo");
  }

  private TransferNode node(TransferConfigBuilder b) {
    TransferNode n = TransferNode.start(b.build());
    nodes.add(n);
    return n;
  }

  private static ByteBuffer direct(byte[] data) {
    ByteBuffer b = ByteBuffer.allocateDirect(data.length);
    b.put(data).flip();
    return b;
  }

  @Test
  void onlyAPeerWithTheSecretGetsAKey() throws Exception {
    byte[] data = new byte[10_000];
    new Random(1).nextBytes(data);
    TransferNode server = node(ucx().authSecret("right"));
    MemoryRegion r = TestRegions.register(server, direct(data));
    for (TransferConfigBuilder wrong : List.of(ucx().authSecret("wrong"), ucx())) {
      TransferNode client = node(wrong);
      TransferConnectionException e =
          assertThrows(
              TransferConnectionException.class, () -> client.connection(server.localAddress()));
      assertTrue(
          e.getMessage().contains("authSecret") || e.getMessage().contains("authentication"),
          e.getMessage());
    }
    TransferNode client = node(ucx().authSecret("right"));
    TransferBuffer b =
        client
            .connection(server.localAddress())
            .read(ReadRequest.of(r.remote(), 100, 5000))
            .get(60, TimeUnit.SECONDS);
    byte[] got = new byte[5000];
    b.nioBuffer().get(got);
    b.release();
    byte[] want = new byte[5000];
    System.arraycopy(data, 100, want, 0, 5000);
    assertArrayEquals(want, got);
  }

  @Test
  void anIdleNodeSleepsOnTheWorkersEventFd() throws Exception {
    TransferNode server = node(ucx());
    TransferNode client = node(ucx());
    MemoryRegion r = TestRegions.register(server, direct(new byte[4096]));
    client
        .connection(server.localAddress())
        .read(ReadRequest.of(r.remote(), 0, 4096))
        .get(60, TimeUnit.SECONDS)
        .release();
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    List<Long> ids = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("memwire-ucx-progress-")) {
        ids.add(t.getId());
      }
    }
    assertTrue(ids.size() >= 2, "one progress thread per node: " + ids);
    long before = ids.stream().mapToLong(mx::getThreadCpuTime).sum();
    long wallStart = System.nanoTime();
    Thread.sleep(1000); // measuring idle CPU needs idle wall time
    long used = ids.stream().mapToLong(mx::getThreadCpuTime).sum() - before;
    long wall = System.nanoTime() - wallStart;
    assertTrue(
        used < wall / 20, "idle progress threads used " + used / 1_000_000 + " ms CPU in 1 s");
  }

  @Test
  void autoNeverPicksUcxWithoutRdma() {
    ProviderSelection.Decision d =
        ProviderSelection.decide(TransferConfig.builder().bindAddress("127.0.0.1").build());
    if (new java.io.File("/sys/class/infiniband").list() == null) {
      assertEquals(ProviderKind.TCP, d.kind(), d.toString());
      assertTrue(d.reason().contains("ucx not used because no RDMA device"), d.reason());
    }
    ProviderSelection.Decision tcpOnly =
        ProviderSelection.decide(
            TransferConfig.builder().set("ucxTransports", "tcp,posix").build());
    assertTrue(tcpOnly.kind() != ProviderKind.UCX, tcpOnly.toString());
    assertTrue(
        tcpOnly.reason().contains("include no RDMA transport")
            || tcpOnly.kind() == ProviderKind.VERBS,
        tcpOnly.reason());
  }

  @Test
  void theEnvironmentCheckNamesTheVariableAndTheSparkSetting() {
    assertTrue(UcxLibrary.environmentProblem("").isEmpty());
    for (String v : new String[] {null, "SEGV,BUS"}) {
      String why = UcxLibrary.environmentProblem(v).orElseThrow();
      assertTrue(why.contains("UCX_ERROR_SIGNALS"), why);
      assertTrue(why.contains("spark.executorEnv.UCX_ERROR_SIGNALS="), why);
    }
  }

  @Test
  void settingsBecomeUcxVariablesAndCollisionsAreRefused() {
    UcxSettings s =
        UcxSettings.of(
            TransferConfig.builder()
                .set("device", "mlx5_0")
                .set("gidIndex", "0")
                .set("trafficClass", "106")
                .set("serviceLevel", "1")
                .set("ucxTransports", "rc_verbs")
                .set("ucxConfig", "UCX_MAX_RMA_RAILS=1")
                .build());
    assertEquals("mlx5_0:1", s.values().get("NET_DEVICES"));
    assertEquals("0", s.values().get("IB_GID_INDEX"));
    assertEquals("106", s.values().get("IB_TRAFFIC_CLASS"));
    assertEquals("1", s.values().get("IB_SL"));
    assertEquals("rc_verbs", s.values().get("TLS"));
    assertEquals("1", s.values().get("MAX_RMA_RAILS"));
    assertTrue(s.peerErrorHandling());
    assertTrue(
        !UcxSettings.of(TransferConfig.builder().set("ucxTransports", "posix,cma").build())
            .peerErrorHandling());
    for (String bad : new String[] {"ERROR_SIGNALS=", "TLS=tcp"}) {
      TransferConfig c =
          TransferConfig.builder().set("ucxTransports", "tcp").set("ucxConfig", bad).build();
      TransferConfigException e =
          assertThrows(TransferConfigException.class, () -> UcxSettings.of(c));
      assertTrue(e.getMessage().contains("ucxConfig"), e.getMessage());
    }
  }

  @Test
  void aBadUcxSettingFailsTheStartNamingTheKeys() {
    TransferConfigException e =
        assertThrows(
            TransferConfigException.class,
            () -> node(ucx().set("ucxTransports", "no_such_transport")));
    assertTrue(e.getMessage().contains("ucxTransports"), e.getMessage());
  }

  @Test
  void overRdmaTheBudgetMustFitUnderTheMemlockLimit(@TempDir Path dir) throws Exception {
    Path limits = dir.resolve("limits");
    Files.writeString(
        limits,
        "Limit                     Soft Limit           Hard Limit           Units     \n"
            + "Max locked memory         65536                65536                bytes     \n");
    Optional<MemlockLimit> small = MemlockLimit.read(limits);
    String why = MemlockLimit.budgetProblem(small, 1L << 20).orElseThrow();
    assertTrue(why.startsWith("the locked-memory limit (ulimit -l) is 65536 bytes (64 KiB)"), why);
    assertTrue(why.contains("registrationBudget=1048576 bytes"), why);
    assertTrue(why.contains("LimitMEMLOCK"), why);
    assertEquals(Optional.empty(), MemlockLimit.budgetProblem(small, 65536));
    Files.writeString(
        limits, "Max locked memory         unlimited            unlimited            bytes     \n");
    assertEquals(Optional.empty(), MemlockLimit.budgetProblem(MemlockLimit.read(limits), 1L << 40));
    assertEquals(Optional.empty(), MemlockLimit.budgetProblem(Optional.empty(), 1L << 40));
  }
}
