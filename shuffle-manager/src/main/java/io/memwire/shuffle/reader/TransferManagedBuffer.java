package io.memwire.shuffle.reader;

import io.memwire.transfer.TransferBuffer;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import java.io.InputStream;
import java.nio.ByteBuffer;
import org.apache.spark.network.buffer.ManagedBuffer;

/**
 * A block read one-sided, as Spark's {@link ManagedBuffer}: reference counts map one to one onto
 * the {@link TransferBuffer}'s, so the pooled memory goes back when Spark releases its last
 * reference. The Netty object {@link #convertToNetty()} returns is a new owner, as Spark's contract
 * says: it holds a reference of its own until Netty releases it.
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
    return new LeasedByteBuf(buffer);
  }

  /**
   * Spark 4's TLS path ({@code ManagedBuffer.convertToNettyForSsl}, absent on 3.5, so no
   * {@code @Override}): the same lease as {@link #convertToNetty()}.
   */
  @SuppressWarnings("MissingOverride") // abstract in Spark 4's ManagedBuffer, absent in 3.5's
  public Object convertToNettyForSsl() {
    return new LeasedByteBuf(buffer);
  }

  @Override
  public String toString() {
    return "TransferManagedBuffer{" + buffer + "}";
  }

  /**
   * A Netty buffer over the pooled memory that owns one reference of the {@link TransferBuffer} and
   * drops it when Netty releases the buffer, never frees the memory itself.
   */
  static final class LeasedByteBuf extends UnpooledDirectByteBuf {
    private final TransferBuffer lease;

    LeasedByteBuf(TransferBuffer buffer) {
      // Takes the reference first: if the buffer was already released this throws, no leak.
      super(UnpooledByteBufAllocator.DEFAULT, buffer.retain().nioBuffer(), buffer.length());
      this.lease = buffer;
    }

    @Override
    protected void deallocate() {
      super.deallocate(); // a wrapped buffer: Netty does not free it
      lease.release();
    }
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
