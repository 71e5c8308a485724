package io.memwire.shuffle.reader;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Data reads of verified blocks whose bytes are flipped as they arrive, before the check, as a
 * fault on the transfer would (the stored bytes stay right). None until {@link #inject}.
 */
final class TransportFaults implements ArrivalTap {
  private final AtomicInteger due = new AtomicInteger();

  /** Flips one byte of each of the next {@code reads} data reads. */
  void inject(int reads) {
    due.set(reads);
  }

  @Override
  public void arrived(ByteBuffer bytes) {
    if (due.get() > 0 && bytes.hasRemaining() && due.getAndDecrement() > 0) {
      int at = bytes.position();
      bytes.put(at, (byte) ~bytes.get(at));
    }
  }
}
