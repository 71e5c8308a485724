package io.memwire.shuffle.protocol;

import java.io.EOFException;
import java.io.IOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The local channel between executors and their node's shuffle service (a Unix domain socket).
 * Big-endian frames: {@code u32 length | u8 type | body}, where length counts the type byte and the
 * body and is at most {@value #MAX_FRAME}. Strings are {@code u16 length | UTF-8}.
 *
 * <pre>
 * REGISTER        u16 version | str application | str executor | bytes token | str driverHost
 *                 | u16 driverPort                                   → OK (empty)
 * PUBLISH         i32 shuffle | i32 mapIndex | i64 mapId | str indexPath | str dataPath ("" = none)
 *                 | str checksumPath ("" = none; Spark's checksum file)
 *                                                                    → OK (i32 chunk | i32 entries | u8 layout | RemoteRegion)
 * REMOVE_SHUFFLE  i32 shuffle                                        → OK (empty)
 * STATS           (empty)                                            → OK (u16 n | n × (str, i64))
 * any             ERROR: u8 code | str message
 * </pre>
 *
 * <p>The same frames carry one request over TCP, to the service's resolve port, from a reducer on
 * any node ({@link ResolveClient}), one per connection and with no REGISTER:
 *
 * <pre>
 * RESOLVE         u16 version | str application | i32 shuffle | i32 chunk | bytes old RemoteRegion
 *                 | 32B HMAC-SHA256(token, "memwire-resolve-1" | every byte before it from version)
 *                                                                    → OK (i32 chunk | i32 entries | u8 layout | RemoteRegion)
 * </pre>
 *
 * <p>An OK naming a directory chunk carries its layout: {@code entries} inline index entries per
 * slot (0: headers only) and {@code layout} flags ({@link #LAYOUT_CHECKSUMS}: slots have room for
 * Spark's checksums after their entries; version 3; {@link #LAYOUT_METADATA}: with 0 entries,
 * headers that may name metadata regions holding entries and checksums). A client that does not
 * know a flag refuses the answer and serves the output itself.
 *
 * <p>REGISTER comes first on every connection and binds it to one application; the first REGISTER
 * of an application fixes its token, and a later one must present the same. A malformed frame
 * closes the connection.
 */
public final class ServiceProtocol {
  /** Protocol version sent in REGISTER. */
  public static final int VERSION = 3;

  /** Layout flag of a directory chunk in an OK answer: its slots have room for checksums. */
  public static final int LAYOUT_CHECKSUMS = 1;

  /**
   * Layout flag of a directory chunk of headers only in an OK answer: its slots may name metadata
   * regions (MWS4).
   */
  public static final int LAYOUT_METADATA = 2;

  /** The layout flags of {@code p} in an OK answer. */
  public static int layout(io.memwire.shuffle.directory.DirectoryPointer p) {
    return !p.checksums() ? 0 : p.entries() == 0 ? LAYOUT_METADATA : LAYOUT_CHECKSUMS;
  }

  /** Largest frame, type byte included. */
  public static final int MAX_FRAME = 64 * 1024;

  public static final byte REGISTER = 1;
  public static final byte PUBLISH = 2;
  public static final byte REMOVE_SHUFFLE = 3;
  public static final byte STATS = 4;

  /** A reducer's request for the new directory pointer of a pointer from before a restart. */
  public static final byte RESOLVE = 5;

  public static final byte OK = (byte) 0x80;
  public static final byte ERROR = (byte) 0x81;

  /** ERROR codes. */
  public static final int E_BAD_REQUEST = 1;

  public static final int E_NOT_REGISTERED = 2;
  public static final int E_DENIED = 3;
  public static final int E_BAD_OUTPUT = 4;
  public static final int E_NO_CAPACITY = 5;
  public static final int E_CLOSED = 6;

  /** A quota of the user or application (or a node limit) is reached; the message names it. */
  public static final int E_QUOTA = 7;

  /** RESOLVE: the service took back no output under that pointer (a fetch failure follows). */
  public static final int E_NOT_FOUND = 8;

  private ServiceProtocol() {}

  /** A frame being built: type, then body fields. */
  public static final class Out {
    private ByteBuffer b = ByteBuffer.allocate(256).order(ByteOrder.BIG_ENDIAN);

    public Out(byte type) {
      b.putInt(0).put(type);
    }

    private void room(int n) {
      if (b.remaining() < n) {
        if (b.position() + n > MAX_FRAME + 4) {
          throw new IllegalArgumentException("frame over " + MAX_FRAME + " bytes");
        }
        ByteBuffer bigger =
            ByteBuffer.allocate(Math.max(b.capacity() * 2, b.position() + n))
                .order(ByteOrder.BIG_ENDIAN);
        b.flip();
        bigger.put(b);
        b = bigger;
      }
    }

    public Out i32(int v) {
      room(4);
      b.putInt(v);
      return this;
    }

    public Out i64(long v) {
      room(8);
      b.putLong(v);
      return this;
    }

    public Out u8(int v) {
      room(1);
      b.put((byte) v);
      return this;
    }

    public Out u16(int v) {
      room(2);
      b.putShort((short) v);
      return this;
    }

    public Out bytes(byte[] v) {
      if (v.length > 0xFFFF) {
        throw new IllegalArgumentException("field over 65535 bytes");
      }
      room(2 + v.length);
      b.putShort((short) v.length).put(v);
      return this;
    }

    public Out str(String s) {
      return bytes(s.getBytes(StandardCharsets.UTF_8));
    }

    /** Bytes without a length (the last field of a body). */
    public Out raw(byte[] v) {
      room(v.length);
      b.put(v);
      return this;
    }

    /** True for an ERROR frame. */
    public boolean isError() {
      return b.get(4) == ERROR;
    }

    /** The whole frame, length filled in, ready to write. */
    public ByteBuffer frame() {
      ByteBuffer f = b.duplicate();
      f.flip();
      f.putInt(0, f.limit() - 4);
      return f;
    }
  }

  /** A received frame's body, read field by field; a short or bad field throws IOException. */
  public static final class In {
    private final byte type;
    private final ByteBuffer b;

    public In(byte type, ByteBuffer body) {
      this.type = type;
      this.b = body.order(ByteOrder.BIG_ENDIAN);
    }

    public byte type() {
      return type;
    }

    public int i32() throws IOException {
      try {
        return b.getInt();
      } catch (BufferUnderflowException e) {
        throw new IOException("truncated frame");
      }
    }

    public long i64() throws IOException {
      try {
        return b.getLong();
      } catch (BufferUnderflowException e) {
        throw new IOException("truncated frame");
      }
    }

    public int u8() throws IOException {
      try {
        return b.get() & 0xFF;
      } catch (BufferUnderflowException e) {
        throw new IOException("truncated frame");
      }
    }

    public int u16() throws IOException {
      try {
        return b.getShort() & 0xFFFF;
      } catch (BufferUnderflowException e) {
        throw new IOException("truncated frame");
      }
    }

    public byte[] bytes() throws IOException {
      int n = u16();
      if (n > b.remaining()) {
        throw new IOException("truncated frame");
      }
      byte[] v = new byte[n];
      b.get(v);
      return v;
    }

    public String str() throws IOException {
      try {
        return StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .decode(ByteBuffer.wrap(bytes()))
            .toString();
      } catch (CharacterCodingException e) {
        throw new IOException("string field is not UTF-8");
      }
    }

    /** What is left of the body (for payloads decoded elsewhere). */
    public ByteBuffer rest() {
      return b.slice();
    }

    /** Fails unless the whole body was read. */
    public void end() throws IOException {
      if (b.hasRemaining()) {
        throw new IOException(b.remaining() + " unexpected bytes at the end of a frame");
      }
    }
  }

  /**
   * Reads one frame's header length field and checks it.
   *
   * @throws IOException when the length is 0 or over {@link #MAX_FRAME}
   */
  public static int checkLength(int length) throws IOException {
    if (length < 1 || length > MAX_FRAME) {
      throw new IOException("frame length " + length + " out of range 1.." + MAX_FRAME);
    }
    return length;
  }

  /** Thrown on EOF in the middle of a frame or before the first byte. */
  public static EOFException closed() {
    return new EOFException("connection closed by the peer");
  }
}
