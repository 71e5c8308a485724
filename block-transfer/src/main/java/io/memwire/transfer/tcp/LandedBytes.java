package io.memwire.transfer.tcp;

import java.nio.ByteBuffer;

/**
 * A look at each read response's bytes on the reading side, once they have all landed in the read's
 * destination and before the read completes: the seam through which a test corrupts a transfer
 * (flips a byte of one response) to prove that readers catch and repair it. Called on the
 * connection's event-loop thread; {@link #NONE} in production.
 */
@FunctionalInterface
public interface LandedBytes {
  /** Does nothing: the provider's default. */
  LandedBytes NONE = bytes -> {};

  /** Sees (and may change) the response's bytes: {@code bytes} spans exactly them. */
  void landed(ByteBuffer bytes);
}
