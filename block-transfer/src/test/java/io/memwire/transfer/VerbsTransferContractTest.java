package io.memwire.transfer;

import io.memwire.transfer.verbs.RdmaInventory;
import io.memwire.transfer.verbs.VerbsProbe;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;

/**
 * The contract suite on the verbs provider. Runs where an RDMA device and libdisni are present
 * (real NICs, or the Soft-RoCE guest); elsewhere every test is skipped with the probe's reason.
 * {@code -Dmemwire.test.verbs.device=rxe0} or {@code -Dmemwire.test.verbs.bind=IP} pick the port;
 * by default the first RDMA device is used.
 */
class VerbsTransferContractTest extends TransferContractTest {

  /** The verbs configuration the verbs tests share. */
  static TransferConfigBuilder verbsConfig() {
    TransferConfigBuilder b =
        TransferConfig.builder()
            .provider(ProviderKind.VERBS)
            .registrationBudget(512L << 20)
            .poolMaxBytes(64 << 20);
    String bind = System.getProperty("memwire.test.verbs.bind");
    String device = System.getProperty("memwire.test.verbs.device");
    if (bind != null && !bind.isBlank()) {
      b.bindAddress(bind);
    }
    if (device != null && !device.isBlank()) {
      b.device(device);
    } else if (bind == null || bind.isBlank()) {
      List<RdmaInventory.Device> ds = RdmaInventory.system().devices();
      if (!ds.isEmpty()) {
        b.device(ds.get(0).name());
      }
    }
    return b;
  }

  /** Skips the calling test, with the probe's one-line reason, where verbs cannot run. */
  static void assumeVerbs() {
    Optional<String> why = VerbsProbe.unavailableReason(verbsConfig().build());
    Assumptions.assumeTrue(why.isEmpty(), () -> "verbs unavailable: " + why.get());
  }

  @BeforeEach
  void requireVerbs() {
    assumeVerbs();
  }

  @Override
  protected TransferConfigBuilder baseConfig() {
    return verbsConfig();
  }
}
