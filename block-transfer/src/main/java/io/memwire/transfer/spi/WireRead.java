package io.memwire.transfer.spi;

import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.TransferException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One read as a provider sees it: a remote (key, address, length) inside one registered segment,
 * landing in a local destination of exactly {@code length} bytes. At most the node's maximum
 * transfer size. It ends exactly once: the first {@link #complete()} or {@link #fail} counts and
 * any later one is ignored, so a provider's failure path and a late completion cannot both reach
 * the owner.
 */
public abstract class WireRead {
  private final RegionDescriptor source;
  private final long remoteAddress;
  private final int length;
  private final ByteBuffer destination;
  private final long destinationAddress;
  private final long destinationKey;
  private final AtomicBoolean ended = new AtomicBoolean();

  protected WireRead(
      RegionDescriptor source,
      long remoteAddress,
      int length,
      ByteBuffer destination,
      long destinationAddress,
      long destinationKey) {
    this.source = source;
    this.remoteAddress = remoteAddress;
    this.length = length;
    this.destination = destination;
    this.destinationAddress = destinationAddress;
    this.destinationKey = destinationKey;
  }

  /** The segment read from (for the key and error messages). */
  public final RegionDescriptor source() {
    return source;
  }

  public final long remoteKey() {
    return source.key();
  }

  public final long remoteAddress() {
    return remoteAddress;
  }

  public final int length() {
    return length;
  }

  /** Direct buffer, position 0, limit {@code length}: where the bytes go. */
  public final ByteBuffer destination() {
    return destination;
  }

  public final long destinationAddress() {
    return destinationAddress;
  }

  /** Local key of the destination's registration (verbs: lkey). */
  public final long destinationKey() {
    return destinationKey;
  }

  /** True once the read has completed or failed. */
  public final boolean isEnded() {
    return ended.get();
  }

  /** All {@code length} bytes are in the destination; false if the read had already ended. */
  public final boolean complete() {
    if (!ended.compareAndSet(false, true)) {
      return false;
    }
    onComplete();
    return true;
  }

  /**
   * The read failed; the destination's content is undefined and will not be handed out. False if
   * the read had already ended.
   */
  public final boolean fail(TransferException cause) {
    if (!ended.compareAndSet(false, true)) {
      return false;
    }
    onFail(cause);
    return true;
  }

  /** Called once, by {@link #complete()}. */
  protected abstract void onComplete();

  /** Called once, by {@link #fail}. */
  protected abstract void onFail(TransferException cause);
}
