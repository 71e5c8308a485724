package io.memwire.transfer;

import io.memwire.transfer.memory.MemoryUnit;
import java.nio.ByteBuffer;

/**
 * The bytes of one completed read, in registered direct memory. A view of a reference-counted
 * {@link MemoryUnit} of the node's read pool (or, for a read into a caller's region, of an
 * untracked unit): it arrives with a count of 1; {@link #retain()} adds one, {@link #release()}
 * drops one and, at zero, returns the memory to the pool. Using it after the last release, or
 * releasing it once too often, raises {@link IllegalStateException}.
 */
public final class TransferBuffer {
  private final ByteBuffer view;
  private final long address;
  private final int length;
  private final MemoryUnit unit;

  TransferBuffer(ByteBuffer view, long address, int length, MemoryUnit unit) {
    this.view = view;
    this.address = address;
    this.length = length;
    this.unit = unit;
  }

  /** A new view of the bytes: position 0, limit {@link #length()}. */
  public ByteBuffer nioBuffer() {
    unit.ensureLive("nioBuffer()");
    return view.duplicate();
  }

  /** Native address of byte 0. */
  public long address() {
    unit.ensureLive("address()");
    return address;
  }

  public int length() {
    return length;
  }

  public int refCnt() {
    return unit.refCnt();
  }

  /** The unit of registered memory this buffer is a view of. */
  public MemoryUnit unit() {
    return unit;
  }

  public TransferBuffer retain() {
    unit.retain();
    return this;
  }

  /** Drops one reference; returns true when this was the last one and the memory went back. */
  public boolean release() {
    return unit.release();
  }

  @Override
  public String toString() {
    return "TransferBuffer{" + length + " bytes, refCnt=" + unit.refCnt() + "}";
  }
}
