package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ucx.UcxTestSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The contract suite on the ucx provider, over UCX's tcp transport (loopback) and over its shared
 * memory transports, and over an RDMA device when {@code memwire.test.ucx.device} names one
 * (verbs-check in the Soft-RoCE guest). Without UCX installed it skips with the reason (JUnit
 * assumption).
 */
class UcxTransferContractTest {
  @BeforeAll
  static void ucxLoads() {
    UcxTestSupport.assumeUcx();
  }

  @AfterAll
  static void everyUcxObjectReleased() {
    assertTrue(UcxTestSupport.allReleased(), UcxTestSupport.describe());
  }

  /** UCX's tcp transport on the loopback interface. */
  @Nested
  class OverTcp extends TransferContractTest {
    @Override
    protected TransferConfigBuilder baseConfig() {
      return TransferConfig.builder()
          .provider(ProviderKind.UCX)
          .bindAddress("127.0.0.1")
          .set("ucxTransports", "tcp")
          .set("ucxConfig", "NET_DEVICES=lo");
    }
  }

  /** UCX's shared-memory transports (posix, sysv, cma): both nodes on this host. */
  @Nested
  class OverSharedMemory extends TransferContractTest {
    @Override
    protected TransferConfigBuilder baseConfig() {
      return TransferConfig.builder()
          .provider(ProviderKind.UCX)
          .bindAddress("127.0.0.1")
          .set("ucxTransports", "posix,sysv,cma");
    }
  }

  /**
   * UCX's verbs transports on the device {@code memwire.test.ucx.device} ({@code rxe0:1}), bound to
   * {@code memwire.test.ucx.bind}; {@code memwire.test.ucx.transports} (default {@code
   * rc_verbs,ud_verbs}: endpoints made from worker addresses wire up over ud) and {@code
   * memwire.test.ucx.gidIndex} (Soft-RoCE's ud needs 0).
   */
  @Nested
  @EnabledIfSystemProperty(named = "memwire.test.ucx.device", matches = ".+")
  class OverRdma extends TransferContractTest {
    @Override
    protected TransferConfigBuilder baseConfig() {
      TransferConfigBuilder b =
          TransferConfig.builder()
              .provider(ProviderKind.UCX)
              .bindAddress(System.getProperty("memwire.test.ucx.bind", "127.0.0.1"))
              .device(System.getProperty("memwire.test.ucx.device"))
              .set("ucxTransports", System.getProperty("memwire.test.ucx.transports", "rc_verbs"));
      String gid = System.getProperty("memwire.test.ucx.gidIndex");
      return gid == null || gid.isBlank() ? b : b.set("gidIndex", gid);
    }
  }
}
