package io.memwire.flight;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.flight.wire.ClientMessage;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client's FREE messages of one exchange, and its half-close. FREEs are queued from any thread
 * (transport threads as reads end, the pump thread for empty batches) and sent in groups by one
 * flush task on the client's executor; the half-close comes from the pump thread at the server's
 * END. Both write under one lock, so no FREE is overtaken and none follows the half-close.
 */
final class FreeSender {
  private static final Logger LOG = LoggerFactory.getLogger(FreeSender.class);

  private final FlightClient.ClientStreamListener writer;
  private final BufferAllocator allocator;
  private final Executor executor;
  private final ConcurrentLinkedQueue<Long> frees = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean flushScheduled = new AtomicBoolean();

  /** FREEs queued and not yet sent. */
  private final AtomicInteger unflushed = new AtomicInteger();

  private final Object writerLock = new Object();

  /** The writer was half-closed or the stream closed. */
  @GuardedBy("writerLock")
  private boolean writerDone;

  FreeSender(
      FlightClient.ClientStreamListener writer, BufferAllocator allocator, Executor executor) {
    this.writer = writer;
    this.allocator = allocator;
    this.executor = executor;
  }

  /** Queues a FREE for the next flush; returns how many are now waiting to be sent. */
  int queue(long seq) {
    frees.add(seq);
    return unflushed.incrementAndGet();
  }

  /** Has the queued FREEs sent soon, on the executor (once, however often asked meanwhile). */
  void sendSoon() {
    if (flushScheduled.compareAndSet(false, true)) {
      try {
        executor.execute(this::flush);
      } catch (RuntimeException e) {
        flushScheduled.set(false); // client closing: the server releases leases when the call ends
      }
    }
  }

  /** Sends every queued FREE in one message. */
  void flush() {
    synchronized (writerLock) {
      flushScheduled.set(false);
      long[] seqs = new long[16];
      int n = 0;
      for (Long s = frees.poll(); s != null; s = frees.poll()) {
        if (n == seqs.length) {
          seqs = Arrays.copyOf(seqs, n * 2);
        }
        seqs[n++] = s;
      }
      unflushed.addAndGet(-n);
      if (n == 0 || writerDone) {
        return;
      }
      int size = ClientMessage.freeSize(n);
      ByteBuffer msg = ByteBuffer.allocate(size);
      ClientMessage.writeFree(msg, seqs, n);
      ArrowBuf buf = allocator.buffer(size);
      buf.setBytes(0, msg.array());
      buf.writerIndex(size);
      try {
        writer.putMetadata(buf); // takes ownership
      } catch (RuntimeException e) {
        LOG.debug("sending FREE failed; the server releases leases when the exchange ends", e);
      }
    }
  }

  /** Sends what is queued, then half-closes the exchange: the client has nothing more to say. */
  void halfClose() {
    flush();
    synchronized (writerLock) {
      if (!writerDone) {
        writerDone = true;
        writer.completed();
      }
    }
  }

  /** The stream is closing: nothing is sent any more. */
  void stop() {
    synchronized (writerLock) {
      writerDone = true;
    }
  }
}
