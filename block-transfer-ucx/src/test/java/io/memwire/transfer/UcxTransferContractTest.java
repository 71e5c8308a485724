package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ucx.UcxTestSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;

/**
 * The contract suite on the ucx provider, over UCX's tcp transport (loopback) and over its shared
 * memory transports. Without UCX installed it skips with the reason (JUnit assumption).
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
}
