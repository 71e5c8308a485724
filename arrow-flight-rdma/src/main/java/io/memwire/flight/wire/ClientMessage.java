package io.memwire.flight.wire;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What the client sends back on the exchange: FREE, the sequence numbers of leases it no longer
 * needs (their bytes are in its own memory).
 *
 * <pre>
 *  0  4B   magic "MWFC"
 *  4  u16  version (1)
 *  6  u8   kind (1 = FREE)
 *  7  u8   reserved, 0
 *  8  u32  count
 * 12  u64  sequence numbers, count of them
 * </pre>
 */
public final class ClientMessage {
  static final int MAGIC = 0x4D574643; // "MWFC"
  public static final byte FREE = 1;

  private ClientMessage() {}

  public static int freeSize(int count) {
    return 12 + 8 * count;
  }

  /** Writes a FREE message for {@code seqs[0..count)} at the buffer's position. */
  public static void writeFree(ByteBuffer out, long[] seqs, int count) {
    ByteBuffer b = out.order(ByteOrder.BIG_ENDIAN);
    b.putInt(MAGIC).putShort(ExchangeRequest.VERSION).put(FREE).put((byte) 0).putInt(count);
    for (int i = 0; i < count; i++) {
      b.putLong(seqs[i]);
    }
  }

  /**
   * The sequence numbers of a FREE message.
   *
   * @throws WireException when the bytes are not a FREE message of this version
   */
  public static long[] readFree(ByteBuffer in) {
    ByteBuffer b = in.duplicate().order(ByteOrder.BIG_ENDIAN);
    if (b.remaining() < 12 || b.getInt() != MAGIC) {
      throw new WireException("not an RDMA client message");
    }
    short version = b.getShort();
    if (version != ExchangeRequest.VERSION) {
      throw new WireException("unsupported RDMA client message version " + version);
    }
    byte kind = b.get();
    if (kind != FREE) {
      throw new WireException("unknown RDMA client message kind " + kind);
    }
    b.get();
    int n = b.getInt();
    if (n < 0 || b.remaining() < 8L * n) {
      throw new WireException("FREE message truncated: " + n + " sequence numbers announced");
    }
    long[] seqs = new long[n];
    for (int i = 0; i < n; i++) {
      seqs[i] = b.getLong();
    }
    return seqs;
  }
}
