package io.memwire.flight.wire;

import io.memwire.transfer.ProviderKind;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The command of the DoExchange descriptor that opens an RDMA data-plane stream: which ticket,
 * which transfer provider the client reads with, and the client's credit window.
 *
 * <pre>
 *  0  4B   magic "MWFX"
 *  4  u16  version (3)
 *  6  u8   provider (1 = tcp, 2 = verbs)
 *  7  u8   reserved, 0
 *  8  u32  window: most batches leased at once
 * 12  u64  window: most body bytes leased at once
 * 20  u32  ticket length
 * 24  ...  ticket bytes
 * </pre>
 */
public final class ExchangeRequest {
  static final int MAGIC = 0x4D574658; // "MWFX"

  /**
   * 2: BATCH carries a lease guard (version 1 clients could hand out bytes of a reused body); 3:
   * BATCH carries the body's CRC32C, the guard's offset left the wire (always 0).
   */
  public static final short VERSION = 3;

  private static final int FIXED = 24;

  private final ProviderKind provider;
  private final int windowBatches;
  private final long windowBytes;
  private final byte[] ticket;

  public ExchangeRequest(
      ProviderKind provider, int windowBatches, long windowBytes, byte[] ticket) {
    if (provider == ProviderKind.AUTO) {
      throw new IllegalArgumentException("an exchange request names tcp or verbs, not auto");
    }
    if (windowBatches < 1 || windowBytes < 1) {
      throw new IllegalArgumentException(
          "window must allow at least one batch and one byte: "
              + windowBatches
              + ", "
              + windowBytes);
    }
    this.provider = provider;
    this.windowBatches = windowBatches;
    this.windowBytes = windowBytes;
    this.ticket = ticket.clone();
  }

  public ProviderKind provider() {
    return provider;
  }

  public int windowBatches() {
    return windowBatches;
  }

  public long windowBytes() {
    return windowBytes;
  }

  public byte[] ticket() {
    return ticket.clone();
  }

  public byte[] toBytes() {
    ByteBuffer b = ByteBuffer.allocate(FIXED + ticket.length).order(ByteOrder.BIG_ENDIAN);
    b.putInt(MAGIC).putShort(VERSION).put(provider.wireCode()).put((byte) 0);
    b.putInt(windowBatches).putLong(windowBytes).putInt(ticket.length).put(ticket);
    return b.array();
  }

  /** True when {@code command} starts with this request's magic (whatever its version). */
  public static boolean matches(byte[] command) {
    return command != null
        && command.length >= 4
        && ByteBuffer.wrap(command).order(ByteOrder.BIG_ENDIAN).getInt() == MAGIC;
  }

  /**
   * Decodes a request.
   *
   * @throws WireException for a wrong magic, an unsupported version or a truncated request
   */
  public static ExchangeRequest fromBytes(byte[] command) {
    if (!matches(command)) {
      throw new WireException("not an RDMA exchange request");
    }
    if (command.length < FIXED) {
      throw new WireException("RDMA exchange request truncated: " + command.length + " bytes");
    }
    ByteBuffer b = ByteBuffer.wrap(command).order(ByteOrder.BIG_ENDIAN);
    b.getInt();
    short version = b.getShort();
    if (version != VERSION) {
      throw new WireException(
          "unsupported RDMA exchange version " + version + "; this server speaks " + VERSION);
    }
    byte code = b.get();
    ProviderKind provider;
    if (code == ProviderKind.TCP.wireCode()) {
      provider = ProviderKind.TCP;
    } else if (code == ProviderKind.VERBS.wireCode()) {
      provider = ProviderKind.VERBS;
    } else if (code == ProviderKind.UCX.wireCode()) {
      provider = ProviderKind.UCX;
    } else {
      throw new WireException("unknown transfer provider code " + code);
    }
    b.get();
    int batches = b.getInt();
    long bytes = b.getLong();
    int n = b.getInt();
    if (n < 0 || n != b.remaining()) {
      throw new WireException(
          "RDMA exchange request: ticket length " + n + " but " + b.remaining() + " bytes follow");
    }
    byte[] ticket = new byte[n];
    b.get(ticket);
    try {
      return new ExchangeRequest(provider, batches, bytes, ticket);
    } catch (IllegalArgumentException e) {
      throw new WireException(e.getMessage());
    }
  }
}
