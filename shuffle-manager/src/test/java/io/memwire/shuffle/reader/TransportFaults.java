package io.memwire.shuffle.reader;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test seam: data reads of verified blocks whose bytes are flipped as they arrive, before the
 * check, as a fault on the transfer would (the stored bytes stay right). None unless a test asks.
 */
final class TransportFaults {
  private final AtomicInteger due = new AtomicInteger();

  /** Flips one byte of each of the next {@code reads} data reads. */
  void inject(int reads) {
    due.set(reads);
  }

  /** Applies an injected fault to a data read's bytes, if one is due. */
  void apply(ByteBuffer bytes) {
    if (due.get() > 0 && bytes.hasRemaining() && due.getAndDecrement() > 0) {
      int at = bytes.position();
      bytes.put(at, (byte) ~bytes.get(at));
    }
  }
}
