package io.memwire.shuffle.it;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.ucx.UcxProviderFactory;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;

/**
 * The differential jobs with {@code provider=ucx} over UCX's tcp transport on loopback: results
 * equal to Spark's sort shuffle, remote bytes read one-sided. Skips (with the reason) without UCX.
 */
class UcxDifferentialTest extends DifferentialTestBase {
  @Override
  Map<String, String> variant() {
    // Here, not in a @BeforeAll of this class: the base class starts the cluster before those.
    Optional<String> why =
        new UcxProviderFactory()
            .unavailableReason(TransferConfig.builder().provider(ProviderKind.UCX).build());
    Assumptions.assumeTrue(why.isEmpty(), () -> "ucx not available: " + why.orElse(""));
    return Map.of(
        "spark.shuffle.rdma.provider", "ucx",
        "spark.shuffle.rdma.ucxTransports", "tcp",
        "spark.shuffle.rdma.ucxConfig", "NET_DEVICES=lo",
        "spark.executorEnv.UCX_ERROR_SIGNALS", "");
  }
}
