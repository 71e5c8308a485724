package io.memwire.transfer.spi;

/** One piece of memory registered with a provider. */
public interface ProviderRegistration {

  /** The key a peer presents to read this memory (verbs: rkey). */
  long remoteKey();

  /** The key local reads use for this memory as a destination (verbs: lkey). */
  long localKey();

  /** Base address. */
  long address();

  /** Length in bytes. */
  int length();

  /**
   * Stops serving this memory at once: new remote reads of it fail with a remote access error.
   * {@code onQuiesced} runs (on any thread, possibly before this returns) once the provider will
   * never touch the memory again, so the caller can unmap or free it.
   */
  void deregister(Runnable onQuiesced);
}
