package io.memwire.transfer.ucx;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.spi.ProviderFactory;
import io.memwire.transfer.spi.TransportProvider;
import java.util.Optional;

/**
 * Opens {@link UcxProvider}s. Asked with {@code provider=auto}, it is available only where UCX
 * would use RDMA (an RDMA device, UCX's verbs module, RDMA transports when they are named): UCX
 * over tcp or shared memory is slower than the tcp provider, so it runs only when asked for by
 * name.
 */
public final class UcxProviderFactory implements ProviderFactory {
  @Override
  public ProviderKind kind() {
    return ProviderKind.UCX;
  }

  @Override
  public Optional<String> unavailableReason(TransferConfig config) {
    UcxSettings settings = UcxSettings.of(config);
    if (config.provider() == ProviderKind.AUTO) {
      // Before loading anything: no RDMA here means no reason to load UCX into this JVM.
      Optional<String> noRdma = settings.whyNoRdma();
      if (noRdma.isPresent()) {
        return noRdma;
      }
    }
    return UcxLibrary.load();
  }

  @Override
  public TransportProvider open(TransferConfig config) {
    return UcxStart.open(config);
  }
}
