package io.memwire.transfer.tcp;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.spi.ProviderFactory;
import io.memwire.transfer.spi.TransportProvider;
import java.util.Optional;

/** Opens {@link TcpProvider}s; tcp runs wherever Java does. */
public final class TcpProviderFactory implements ProviderFactory {
  @Override
  public ProviderKind kind() {
    return ProviderKind.TCP;
  }

  @Override
  public Optional<String> unavailableReason(TransferConfig config) {
    return Optional.empty();
  }

  @Override
  public TransportProvider open(TransferConfig config) {
    return TcpProvider.open(config);
  }
}
