package io.memwire.transfer;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.memory.MemoryUnit;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * One caller's read on a {@link Connection} and its future: the destination memory it reads into
 * and the count of its parts; completes when all its parts have ended.
 */
final class PendingRead {
  final ReadRequest request;
  final CompletableFuture<TransferBuffer> future = new CompletableFuture<>();

  /** Tells the connection one fewer request is open. */
  private final Runnable onEnd;

  int parts;

  @GuardedBy("this")
  private int ended;

  @GuardedBy("this")
  private TransferException error;

  @GuardedBy("this")
  private BufferPool.Slot slot;

  ByteBuffer destination;
  long destinationAddress;
  long destinationKey;

  /** Why the pool could not give this request memory, or null. */
  @GuardedBy("this")
  private RuntimeException noDestination;

  PendingRead(ReadRequest request, Runnable onEnd) {
    this.request = request;
    this.onEnd = onEnd;
  }

  /**
   * Takes destination memory on first use, so queued requests pin nothing: true when it has some,
   * false when the pool must grow first ({@link #reserveDestination}, off this thread). Never
   * allocates or registers memory. Throws why the pool could not give any.
   */
  synchronized boolean hasDestination(TransferNode node) {
    if (destination != null) {
      return true;
    }
    if (noDestination != null) {
      throw noDestination;
    }
    MemoryRegion dest = request.destination();
    if (dest == null) {
      BufferPool.Slot s = node.bufferPool().tryAllocate(request.length());
      if (s == null) {
        return false;
      }
      use(s);
    } else {
      MemoryRegion.Segment s = dest.segments().get(0);
      int off = (int) request.destinationOffset();
      destination = s.memory.duplicate().position(off).limit(off + request.length()).slice();
      destinationAddress = s.address + off;
      destinationKey = s.registration.localKey();
    }
    return true;
  }

  /**
   * On the pool's thread: takes destination memory, growing the pool if it must, or records why
   * there is none. Gives the memory straight back when the request ended meanwhile (failed).
   */
  void reserveDestination(TransferNode node) {
    BufferPool.Slot s = null;
    RuntimeException failure = null;
    try {
      s = node.bufferPool().allocate(request.length());
    } catch (RuntimeException e) {
      failure = e;
    } catch (OutOfMemoryError e) {
      // Out of direct memory: this read fails, the others (and the pool's thread) go on.
      failure = new RegistrationException("cannot allocate a read destination: " + e, e);
    }
    synchronized (this) {
      if (ended < parts && destination == null) {
        if (s != null) {
          use(s);
        } else {
          noDestination = failure;
        }
        return;
      }
    }
    if (s != null) {
      s.unit.release();
    }
  }

  @GuardedBy("this")
  private void use(BufferPool.Slot s) {
    slot = s;
    destination = s.view;
    destinationAddress = s.address;
    destinationKey = s.localKey;
  }

  void partDone(TransferException e, TransferNode node) {
    boolean last;
    BufferPool.Slot slot;
    TransferException failure;
    synchronized (this) {
      if (e != null && error == null) {
        error = e;
      }
      ended++;
      last = ended == parts;
      slot = this.slot;
      failure = error;
    }
    if (!last) {
      return;
    }
    onEnd.run();
    if (failure != null) {
      if (slot != null) {
        slot.unit.release();
      }
      node.counters().requestFailed(failure);
      future.completeExceptionally(failure);
    } else {
      TransferBuffer result =
          slot != null
              ? node.bufferPool().wrap(slot, request.length())
              : new TransferBuffer(
                  destination,
                  destinationAddress,
                  request.length(),
                  MemoryUnit.untracked(request.length(), "read into a caller's region", () -> {}));
      node.counters().requestCompleted(request.length());
      if (!future.complete(result)) {
        result.release();
      }
    }
  }
}
