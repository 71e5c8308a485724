package io.memwire.shuffle.service;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigBuilder;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.verbs.VerbsProbe;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;

/**
 * {@link ShuffleServiceTest} over the verbs provider: the service registers the outputs it owns as
 * verbs regions (file mappings) and reducers read them with RDMA Reads. Runs where an RDMA device
 * and libdisni are present (the Soft-RoCE guest: {@code -Dmemwire.test.verbs.bind=$SOFTROCE_IP});
 * elsewhere every test is skipped with the probe's reason.
 */
class VerbsShuffleServiceTest extends ShuffleServiceTest {
  private static TransferConfigBuilder verbs() {
    TransferConfigBuilder b =
        TransferConfig.builder()
            .provider(ProviderKind.VERBS)
            .registrationBudget(256L << 20)
            .poolMaxBytes(32 << 20);
    String bind = System.getProperty("memwire.test.verbs.bind");
    if (bind != null && !bind.isBlank()) {
      b.bindAddress(bind);
    }
    return b;
  }

  private static void requireVerbs() {
    Optional<String> why = VerbsProbe.unavailableReason(verbs().build());
    Assumptions.assumeTrue(why.isEmpty(), () -> "verbs unavailable: " + why.get());
  }

  @Override
  protected String[] providerConf() {
    String bind = System.getProperty("memwire.test.verbs.bind", "");
    return bind.isBlank()
        ? new String[] {ServiceSettings.TRANSFER_PREFIX + "provider", "verbs"}
        : new String[] {
          ServiceSettings.TRANSFER_PREFIX + "provider",
          "verbs",
          ServiceSettings.TRANSFER_PREFIX + "bindAddress",
          bind
        };
  }

  @Override
  protected TransferNode newReader() {
    requireVerbs(); // before anything starts: each test is skipped with the probe's reason
    return TransferNode.start(verbs().build());
  }
}
