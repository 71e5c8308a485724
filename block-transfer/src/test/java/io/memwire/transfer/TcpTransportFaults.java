package io.memwire.transfer;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.tcp.TcpProvider;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Tcp nodes whose reading side flips one byte of the next responses it is told to (through the
 * provider's {@link io.memwire.transfer.tcp.LandedBytes} seam): a transfer fault below every check
 * above the transport.
 */
public final class TcpTransportFaults {
  private final AtomicInteger toFlip = new AtomicInteger();
  private final AtomicInteger flipped = new AtomicInteger();

  /** Starts a tcp node on {@code config} whose reads this object corrupts when told to. */
  public TransferNode start(TransferConfig config) {
    TcpProvider p = TcpProvider.open(config, this::landed);
    return new TransferNode(
        config, p, "tcp with transfer faults", NanoClock.SYSTEM, ConnectionPool.newTimer());
  }

  /** Flips one byte (the middle one) of each of the next {@code responses} non-empty responses. */
  public void flipNext(int responses) {
    toFlip.set(responses);
  }

  /** Responses corrupted so far. */
  public int flipped() {
    return flipped.get();
  }

  private void landed(ByteBuffer bytes) {
    if (bytes.hasRemaining() && toFlip.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
      int at = bytes.position() + bytes.remaining() / 2;
      bytes.put(at, (byte) ~bytes.get(at));
      flipped.incrementAndGet();
    }
  }
}
