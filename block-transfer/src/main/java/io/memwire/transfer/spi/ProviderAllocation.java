package io.memwire.transfer.spi;

import java.nio.ByteBuffer;

/**
 * Memory a provider allocated itself ({@link TransportProvider#allocate}), because it serves memory
 * of its own better than memory the node allocated (UCX reads its own shared-memory allocations,
 * and registrations inside them, one-sided, without the serving process). The node books its bytes
 * as it books its own allocations and owns its life: it deregisters {@link #registration()} (when
 * there is one) when the region closes and calls {@link #free()} exactly once, after that
 * deregistration has quiesced.
 */
public interface ProviderAllocation {

  /** The memory, page-aligned: a direct buffer over exactly the bytes asked for. */
  ByteBuffer memory();

  /** Its address (that of {@link #memory()}). */
  long address();

  /**
   * Its registration for remote reads, over all of {@link #memory()}; null when it was not asked to
   * be remotely readable. Deregistering it stops serving the memory but does not free it.
   */
  ProviderRegistration registration();

  /**
   * Frees the memory; called once, after the registration's deregistration has quiesced (or at once
   * when it was never handed out). A provider that closed has freed it already.
   */
  void free();
}
