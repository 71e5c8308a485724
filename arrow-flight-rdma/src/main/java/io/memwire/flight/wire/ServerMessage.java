package io.memwire.flight.wire;

import io.memwire.transfer.RegionDescriptor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * What the server sends as app metadata on the exchange, after the schema and dictionaries went the
 * usual gRPC way. Laid out after Arrow's Dissociated IPC idea: the IPC metadata travels as a
 * message, the body stays where it is, described as a list of (region, offset, length) buffers the
 * client reads one-sidedly.
 *
 * <pre>
 * common:  0 4B magic "MWFS" | 4 u16 version (3) | 6 u8 kind | 7 u8 reserved | 8 u64 sequence
 * BATCH (kind 1), sequence = lease id:
 *   16 u32 lease timeout in ms     20 u32 header length H      24 u64 body length
 *   32 u16 region count R          34 u8 flags (bit 0: body checksum present)
 *   35 u8 reserved                 36 u32 buffer count N
 *   40 u16 guard region index (0xFFFF: no guard, empty body; the word is at offset 0 of it)
 *   42 u16 reserved                44 u32 body CRC32C (0 without the flag)
 *   48 u64 lease generation (the guard word's value, never 0)
 *   56 H bytes: the batch's IPC Message flatbuffer (MessageSerializer.serializeMetadata)
 *   then R region descriptors (RegionDescriptor encoding, 48 bytes each)
 *   then N buffers of 32 bytes: u16 region index (0xFFFF: empty buffer), u16 reserved,
 *        u32 reserved, u64 offset in region, u64 offset in body, u64 length
 *   then u32 app-metadata length and its bytes (what the producer passed to putNext)
 * The body checksum is CRC32C over the bytes of the non-empty buffers, in buffer order (padding
 * between them is not covered).
 * METADATA (kind 2): u32 length, then the producer's putMetadata bytes
 * END (kind 3): sequence = number of batches sent
 * </pre>
 */
public final class ServerMessage {
  static final int MAGIC = 0x4D574653; // "MWFS"
  public static final byte BATCH = 1;
  public static final byte METADATA = 2;
  public static final byte END = 3;

  /** Bytes of a BATCH before its IPC header. */
  private static final int BATCH_FIXED = 56;

  private static final int FLAG_CHECKSUM = 1;

  /** {@link #bodyChecksum()} of a batch that carries none. */
  public static final long NO_CHECKSUM = -1;

  /** Region index of a zero-length buffer: nothing to read. */
  public static final int NO_REGION = 0xFFFF;

  /** One body buffer: where to read it and where it goes in the body. */
  public static final class BufferRef {
    public final int regionIndex;
    public final long regionOffset;
    public final long bodyOffset;
    public final long length;

    public BufferRef(int regionIndex, long regionOffset, long bodyOffset, long length) {
      this.regionIndex = regionIndex;
      this.regionOffset = regionOffset;
      this.bodyOffset = bodyOffset;
      this.length = length;
    }

    /** A zero-length buffer at {@code bodyOffset}: nothing to read. */
    public static BufferRef empty(long bodyOffset) {
      return new BufferRef(NO_REGION, 0, bodyOffset, 0);
    }
  }

  /**
   * Which region holds the lease's guard word (at its offset 0: each word is a region of its own)
   * and what it holds while the lease lives.
   */
  public static final class Guard {
    public final int regionIndex;
    public final long generation;

    public Guard(int regionIndex, long generation) {
      this.regionIndex = regionIndex;
      this.generation = generation;
    }
  }

  private final byte kind;
  private final long sequence;
  private final int leaseTimeoutMillis;
  private final byte[] header;
  private final long bodyLength;
  private final List<RegionDescriptor> regions;
  private final List<BufferRef> buffers;
  private final byte[] appMetadata;
  private final Guard guard;
  private final long bodyChecksum;

  private ServerMessage(
      byte kind,
      long sequence,
      int leaseTimeoutMillis,
      byte[] header,
      long bodyLength,
      List<RegionDescriptor> regions,
      List<BufferRef> buffers,
      byte[] appMetadata,
      Guard guard,
      long bodyChecksum) {
    this.guard = guard;
    this.bodyChecksum = bodyChecksum;
    this.kind = kind;
    this.sequence = sequence;
    this.leaseTimeoutMillis = leaseTimeoutMillis;
    this.header = header;
    this.bodyLength = bodyLength;
    this.regions = regions;
    this.buffers = buffers;
    this.appMetadata = appMetadata;
  }

  /**
   * A batch descriptor; {@code guard} is null only for a batch with nothing to read; {@code
   * bodyChecksum} is the body's CRC32C (an unsigned 32-bit value) or {@link #NO_CHECKSUM}.
   */
  public static ServerMessage batch(
      long seq,
      int leaseTimeoutMillis,
      byte[] header,
      long bodyLength,
      List<RegionDescriptor> regions,
      List<BufferRef> buffers,
      byte[] appMetadata,
      Guard guard,
      long bodyChecksum) {
    if (bodyChecksum != NO_CHECKSUM && (bodyChecksum >>> 32) != 0) {
      throw new IllegalArgumentException("body checksum is not a CRC32C value: " + bodyChecksum);
    }
    if (regions.size() >= NO_REGION) {
      throw new IllegalArgumentException("too many regions in one batch: " + regions.size());
    }
    if (guard != null && (guard.regionIndex >= regions.size() || guard.generation == 0)) {
      throw new IllegalArgumentException(
          "guard names region " + guard.regionIndex + " of " + regions.size() + " or generation 0");
    }
    return new ServerMessage(
        BATCH,
        seq,
        leaseTimeoutMillis,
        header,
        bodyLength,
        regions,
        buffers,
        appMetadata,
        guard,
        bodyChecksum);
  }

  public static ServerMessage metadata(long seq, byte[] appMetadata) {
    return new ServerMessage(
        METADATA, seq, 0, null, 0, List.of(), List.of(), appMetadata, null, NO_CHECKSUM);
  }

  public static ServerMessage end(long batches) {
    return new ServerMessage(
        END, batches, 0, null, 0, List.of(), List.of(), null, null, NO_CHECKSUM);
  }

  /** The CRC32C of a BATCH's body (see the class comment), or {@link #NO_CHECKSUM}. */
  public long bodyChecksum() {
    return bodyChecksum;
  }

  /** The lease guard of a BATCH, or null when it has nothing to read. */
  public Guard guard() {
    return guard;
  }

  public byte kind() {
    return kind;
  }

  public long sequence() {
    return sequence;
  }

  public int leaseTimeoutMillis() {
    return leaseTimeoutMillis;
  }

  /** The IPC Message flatbuffer of a BATCH. */
  public byte[] header() {
    return header;
  }

  public long bodyLength() {
    return bodyLength;
  }

  public List<RegionDescriptor> regions() {
    return regions;
  }

  public List<BufferRef> buffers() {
    return buffers;
  }

  /** The producer's app metadata, or null. */
  public byte[] appMetadata() {
    return appMetadata;
  }

  public int encodedSize() {
    int md = appMetadata == null ? 0 : appMetadata.length;
    switch (kind) {
      case BATCH:
        return BATCH_FIXED
            + header.length
            + regions.size() * RegionDescriptor.ENCODED_SIZE
            + buffers.size() * 32
            + 4
            + md;
      case METADATA:
        return 16 + 4 + md;
      default:
        return 16;
    }
  }

  public void encode(ByteBuffer out) {
    ByteBuffer b = out.order(ByteOrder.BIG_ENDIAN);
    b.putInt(MAGIC).putShort(ExchangeRequest.VERSION).put(kind).put((byte) 0).putLong(sequence);
    if (kind == BATCH) {
      b.putInt(leaseTimeoutMillis).putInt(header.length).putLong(bodyLength);
      boolean sum = bodyChecksum != NO_CHECKSUM;
      b.putShort((short) regions.size()).put((byte) (sum ? FLAG_CHECKSUM : 0)).put((byte) 0);
      b.putInt(buffers.size());
      b.putShort((short) (guard == null ? NO_REGION : guard.regionIndex)).putShort((short) 0);
      b.putInt(sum ? (int) bodyChecksum : 0);
      b.putLong(guard == null ? 0 : guard.generation);
      b.put(header);
      for (RegionDescriptor d : regions) {
        d.encode(b);
      }
      for (BufferRef r : buffers) {
        b.putShort((short) r.regionIndex).putShort((short) 0).putInt(0);
        b.putLong(r.regionOffset).putLong(r.bodyOffset).putLong(r.length);
      }
    }
    if (kind == BATCH || kind == METADATA) {
      if (appMetadata == null) {
        b.putInt(0);
      } else {
        b.putInt(appMetadata.length).put(appMetadata);
      }
    }
  }

  /** True when the bytes start with a server message's magic. */
  public static boolean matches(ByteBuffer in) {
    return in.remaining() >= 4 && in.duplicate().order(ByteOrder.BIG_ENDIAN).getInt() == MAGIC;
  }

  /**
   * Decodes a message. Nothing is allocated beyond what the message's own bytes hold.
   *
   * @throws WireException when the bytes are not a valid server message of this version
   */
  public static ServerMessage decode(ByteBuffer in) {
    ByteBuffer b = in.duplicate().order(ByteOrder.BIG_ENDIAN);
    try {
      if (b.remaining() < 16 || b.getInt() != MAGIC) {
        throw new WireException("not an RDMA data-plane message");
      }
      short version = b.getShort();
      if (version != ExchangeRequest.VERSION) {
        throw new WireException("unsupported RDMA data-plane message version " + version);
      }
      byte kind = b.get();
      b.get();
      long seq = b.getLong();
      switch (kind) {
        case BATCH:
          {
            int lease = b.getInt();
            int h = b.getInt();
            long body = b.getLong();
            int r = Short.toUnsignedInt(b.getShort());
            int flags = b.get();
            b.get();
            int n = b.getInt();
            int gi = Short.toUnsignedInt(b.getShort());
            b.getShort();
            long crc = Integer.toUnsignedLong(b.getInt());
            long gen = b.getLong();
            long checksum = (flags & FLAG_CHECKSUM) != 0 ? crc : NO_CHECKSUM;
            if (h < 0 || n < 0 || body < 0 || body > Integer.MAX_VALUE) {
              throw new WireException(
                  "corrupt batch descriptor: header "
                      + h
                      + " bytes, "
                      + n
                      + " buffers, body "
                      + body
                      + " bytes");
            }
            // Every count is checked against the bytes that follow before anything is allocated:
            // a message cannot make the client allocate more than its own size.
            long need = (long) h + (long) r * RegionDescriptor.ENCODED_SIZE + 32L * n + 4;
            if (need > b.remaining()) {
              throw new WireException(
                  "batch "
                      + seq
                      + " announces "
                      + h
                      + " header bytes, "
                      + r
                      + " regions and "
                      + n
                      + " buffers, but only "
                      + b.remaining()
                      + " bytes follow");
            }
            if (gi != NO_REGION && (gi >= r || gen == 0)) {
              throw new WireException("batch " + seq + " has a bad lease guard");
            }
            Guard guard = gi == NO_REGION ? null : new Guard(gi, gen);
            byte[] header = new byte[h];
            b.get(header);
            List<RegionDescriptor> regions = new ArrayList<>(r);
            for (int i = 0; i < r; i++) {
              regions.add(RegionDescriptor.decode(b));
            }
            List<BufferRef> buffers = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
              int idx = Short.toUnsignedInt(b.getShort());
              b.getShort();
              b.getInt();
              long ro = b.getLong();
              long bo = b.getLong();
              long len = b.getLong();
              if ((idx != NO_REGION && idx >= r)
                  || (idx == NO_REGION && len != 0)
                  || len < 0
                  || bo < 0
                  || ro < 0
                  || len > body
                  || bo > body - len) {
                throw new WireException("buffer " + i + " of batch " + seq + " is out of range");
              }
              buffers.add(new BufferRef(idx, ro, bo, len));
            }
            return batch(seq, lease, header, body, regions, buffers, readBytes(b), guard, checksum);
          }
        case METADATA:
          return metadata(seq, readBytes(b));
        case END:
          return end(seq);
        default:
          throw new WireException("unknown RDMA data-plane message kind " + kind);
      }
    } catch (java.nio.BufferUnderflowException | IllegalArgumentException e) {
      if (e instanceof WireException) {
        throw e;
      }
      throw new WireException("RDMA data-plane message truncated or corrupt: " + e);
    }
  }

  private static byte[] readBytes(ByteBuffer b) {
    int n = b.getInt();
    if (n < 0 || n > b.remaining()) {
      throw new WireException("app metadata length " + n + " exceeds the message");
    }
    if (n == 0) {
      return null;
    }
    byte[] md = new byte[n];
    b.get(md);
    return md;
  }
}
