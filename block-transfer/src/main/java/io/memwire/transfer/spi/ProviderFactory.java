package io.memwire.transfer.spi;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import java.util.Optional;

/**
 * Opens one kind of provider. The transfer node finds the factories with {@link
 * java.util.ServiceLoader} (listed in {@code META-INF/services}), so the API package never names a
 * provider's classes: providers depend on the API, not the other way round.
 */
public interface ProviderFactory {
  /** The kind this factory opens ({@code tcp} or {@code verbs}). */
  ProviderKind kind();

  /**
   * Why this provider cannot run with {@code config} on this host (a sentence for the log and for
   * {@code provider=auto}'s decision), or empty when it can; starts nothing.
   */
  Optional<String> unavailableReason(TransferConfig config);

  /** Opens the provider. */
  TransportProvider open(TransferConfig config);
}
