package io.memwire.transfer.verbs;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.spi.ProviderFactory;
import io.memwire.transfer.spi.TransportProvider;
import java.util.Optional;

/** Opens {@link VerbsProvider}s where {@link VerbsProbe} finds libdisni, a device and memlock. */
public final class VerbsProviderFactory implements ProviderFactory {
  @Override
  public ProviderKind kind() {
    return ProviderKind.VERBS;
  }

  @Override
  public Optional<String> unavailableReason(TransferConfig config) {
    return VerbsProbe.unavailableReason(config);
  }

  @Override
  public TransportProvider open(TransferConfig config) {
    return VerbsProvider.open(config);
  }
}
