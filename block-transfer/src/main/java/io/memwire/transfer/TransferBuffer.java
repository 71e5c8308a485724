package io.memwire.transfer;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The bytes of one completed read, in registered direct memory. Reference counted like Netty's
 * and Arrow's buffers: it arrives with a count of 1; {@link #retain()} adds one, {@link
 * #release()} drops one and, at zero, returns the memory to the pool it came from. Using it after
 * the last release is a bug and raises {@link IllegalStateException}.
 */
public final class TransferBuffer {
  private final ByteBuffer view;
  private final long address;
  private final int length;
  private final Runnable recycler;
  private final AtomicInteger refCnt = new AtomicInteger(1);

  TransferBuffer(ByteBuffer view, long address, int length, Runnable recycler) {
    this.view = view;
    this.address = address;
    this.length = length;
    this.recycler = recycler;
  }

  /** A new view of the bytes: position 0, limit {@link #length()}. */
  public ByteBuffer nioBuffer() {
    ensureLive();
    return view.duplicate();
  }

  /** Native address of byte 0. */
  public long address() {
    ensureLive();
    return address;
  }

  public int length() {
    return length;
  }

  public int refCnt() {
    return refCnt.get();
  }

  public TransferBuffer retain() {
    int c;
    do {
      c = refCnt.get();
      if (c <= 0) {
        throw new IllegalStateException("retain of a released TransferBuffer");
      }
    } while (!refCnt.compareAndSet(c, c + 1));
    return this;
  }

  /** Drops one reference; returns true when this was the last one and the memory went back. */
  public boolean release() {
    int c = refCnt.decrementAndGet();
    if (c == 0) {
      recycler.run();
      return true;
    }
    if (c < 0) {
      refCnt.incrementAndGet();
      throw new IllegalStateException("release of a released TransferBuffer");
    }
    return false;
  }

  private void ensureLive() {
    if (refCnt.get() <= 0) {
      throw new IllegalStateException("TransferBuffer used after release");
    }
  }

  @Override
  public String toString() {
    return "TransferBuffer{" + length + " bytes, refCnt=" + refCnt.get() + "}";
  }
}
