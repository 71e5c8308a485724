package io.memwire.shuffle.reader;

import io.memwire.transfer.TransferBuffer;
import io.netty.buffer.Unpooled;
import java.io.InputStream;
import java.nio.ByteBuffer;
import org.apache.spark.network.buffer.ManagedBuffer;

/**
 * A block read one-sided, as Spark's {@link ManagedBuffer}: reference counts map one to one onto
 * the {@link TransferBuffer}'s, so the pooled memory goes back when Spark releases its last
 * reference.
 */
final class TransferManagedBuffer extends ManagedBuffer {
  private final TransferBuffer buffer;

  TransferManagedBuffer(TransferBuffer buffer) {
    this.buffer = buffer;
  }

  @Override
  public long size() {
    return buffer.length();
  }

  @Override
  public ByteBuffer nioByteBuffer() {
    return buffer.nioBuffer().asReadOnlyBuffer();
  }

  @Override
  public InputStream createInputStream() {
    return new ByteBufferInputStream(buffer.nioBuffer());
  }

  @Override
  public ManagedBuffer retain() {
    buffer.retain();
    return this;
  }

  @Override
  public ManagedBuffer release() {
    buffer.release();
    return this;
  }

  @Override
  public Object convertToNetty() {
    return Unpooled.wrappedBuffer(buffer.nioBuffer());
  }

  @Override
  public Object convertToNettyForSsl() {
    return Unpooled.wrappedBuffer(buffer.nioBuffer());
  }

  @Override
  public String toString() {
    return "TransferManagedBuffer{" + buffer + "}";
  }

  /** Reads a ByteBuffer from its position to its limit. */
  static final class ByteBufferInputStream extends InputStream {
    private final ByteBuffer b;

    ByteBufferInputStream(ByteBuffer b) {
      this.b = b;
    }

    @Override
    public int read() {
      return b.hasRemaining() ? b.get() & 0xff : -1;
    }

    @Override
    public int read(byte[] dst, int off, int len) {
      if (len == 0) {
        return 0;
      }
      if (!b.hasRemaining()) {
        return -1;
      }
      int n = Math.min(len, b.remaining());
      b.get(dst, off, n);
      return n;
    }

    @Override
    public long skip(long n) {
      int k = (int) Math.max(0, Math.min(n, b.remaining()));
      b.position(b.position() + k);
      return k;
    }

    @Override
    public int available() {
      return b.remaining();
    }
  }
}
