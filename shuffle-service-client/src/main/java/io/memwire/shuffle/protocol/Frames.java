package io.memwire.shuffle.protocol;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ByteChannel;

/** Blocking frame I/O on a connected channel (both ends of the local channel use it). */
public final class Frames {
  private Frames() {}

  /** Writes one whole frame. */
  public static void write(ByteChannel ch, ServiceProtocol.Out frame) throws IOException {
    ByteBuffer b = frame.frame();
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }

  /**
   * Reads one whole frame.
   *
   * @return the frame, or null on a clean end of stream before its first byte
   * @throws IOException on a bad length, an end of stream inside the frame, or an I/O error
   */
  public static ServiceProtocol.In read(ByteChannel ch) throws IOException {
    return read(ch, () -> {});
  }

  /**
   * Reads one whole frame, running {@code started} once its first byte is in (a server starts the
   * frame's deadline there: waiting for a frame may take long, receiving one may not).
   *
   * @return the frame, or null on a clean end of stream before its first byte
   */
  public static ServiceProtocol.In read(ByteChannel ch, Runnable started) throws IOException {
    ByteBuffer head = ByteBuffer.allocate(5).order(ByteOrder.BIG_ENDIAN);
    head.limit(1);
    if (!fill(ch, head, true)) {
      return null;
    }
    started.run();
    head.limit(5);
    fill(ch, head, false);
    int length = ServiceProtocol.checkLength(head.getInt(0));
    byte type = head.get(4);
    // The length is checked before anything is allocated from it.
    ByteBuffer body = ByteBuffer.allocate(length - 1);
    fill(ch, body, false);
    body.flip();
    return new ServiceProtocol.In(type, body);
  }

  private static boolean fill(ByteChannel ch, ByteBuffer b, boolean eofAllowedAtStart)
      throws IOException {
    while (b.hasRemaining()) {
      int n = ch.read(b);
      if (n < 0) {
        if (eofAllowedAtStart && b.position() == 0) {
          return false;
        }
        throw ServiceProtocol.closed();
      }
    }
    return true;
  }
}
