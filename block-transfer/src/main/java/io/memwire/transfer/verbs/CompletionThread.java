package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.SVCPollCq;
import com.ibm.disni.verbs.SVCReqNotify;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One of the provider's completion queues ({@link CompletionQueues}) and the one thread that drains
 * it for every queue pair placed on it. While completions keep arriving it polls (up to 32 per
 * call) without re-arming; when the queue is empty it polls a little longer ({@code spinNanos}),
 * then arms notification, polls once more (a completion may have landed before the arm) and only
 * then sleeps on the channel, with a short timeout so it notices close. So a busy queue costs no
 * system call per completion; an idle one costs no CPU. Events are acknowledged in batches.
 * Handlers run on this thread and must not block.
 */
final class CompletionThread implements Runnable, CompletionQueues.Queue {
  private static final Logger LOG = LoggerFactory.getLogger(CompletionThread.class);
  private static final int WAIT_MS = 100;
  private static final int ACK_BATCH = 64;

  /** Receives each completion; wr_id and status are copied out of DiSNI's reused array. */
  interface Handler {
    void completed(long wrId, int status);
  }

  private final IbvCompChannel channel;
  private final IbvCQ cq;
  private final int size;
  private final long spinNanos;
  private final IbvWC[] wcs = new IbvWC[32];
  private final SVCPollCq poll;
  private final SVCReqNotify arm;
  private final Handler handler;
  private final Thread thread;
  private volatile boolean running = true;
  private int unacked;
  // Written by this thread only, read by counters(): with a single writer a volatile
  // read-modify-write is exact (hence the NonAtomicVolatileUpdate suppressions below).
  private volatile long polled;
  private volatile long pollsWithWork;
  private volatile long sleeps;
  private volatile long events;

  /**
   * Creates a queue of {@code size} entries on completion vector {@code compVector} (the device's
   * interrupt vector for its events) and starts its thread.
   */
  CompletionThread(
      IbvContext context, int size, int compVector, long spinNanos, Handler handler, String name)
      throws IOException {
    this.handler = handler;
    this.size = size;
    this.spinNanos = spinNanos;
    this.channel = context.createCompChannel();
    IbvCQ created;
    try {
      created = context.createCQ(channel, size, compVector);
    } catch (IOException | RuntimeException e) {
      channel.destroyCompChannel();
      throw e;
    }
    this.cq = created;
    for (int i = 0; i < wcs.length; i++) {
      wcs[i] = new IbvWC();
    }
    this.poll = cq.poll(wcs, wcs.length);
    this.arm = cq.reqNotification(false);
    this.thread = new Thread(this, name);
    thread.setDaemon(true);
    thread.start();
  }

  IbvCQ cq() {
    return cq;
  }

  int size() {
    return size;
  }

  /** Completions handled. */
  long polled() {
    return polled;
  }

  /** Polls that returned at least one completion. */
  long pollsWithWork() {
    return pollsWithWork;
  }

  /** Times the thread armed the queue and went to sleep on the channel. */
  long sleeps() {
    return sleeps;
  }

  /** Completion events received on the channel (wake-ups by the NIC). */
  long events() {
    return events;
  }

  @Override
  @SuppressWarnings("NonAtomicVolatileUpdate")
  public void run() {
    while (running) {
      try {
        if (drain() > 0 || spin()) {
          continue;
        }
        arm.execute();
        if (drain() > 0) {
          continue; // landed between the last poll and the arm; the armed event comes later
        }
        sleeps++;
        if (channel.getCqEvent(cq, WAIT_MS)) {
          events++;
          if (++unacked >= ACK_BATCH) {
            cq.ackEvents(unacked);
            unacked = 0;
          }
        }
      } catch (IOException | RuntimeException e) {
        if (running) {
          LOG.error("completion queue processing failed; continuing", e);
        }
      }
    }
  }

  /** Polls for up to {@code spinNanos}; true when a completion arrived meanwhile. */
  private boolean spin() throws IOException {
    if (spinNanos <= 0) {
      return false;
    }
    long end = System.nanoTime() + spinNanos;
    do {
      Thread.onSpinWait();
      if (drain() > 0) {
        return true;
      }
    } while (System.nanoTime() < end && running);
    return false;
  }

  /** Handles every completion in the queue; returns how many. */
  @SuppressWarnings("NonAtomicVolatileUpdate")
  private int drain() throws IOException {
    int total = 0;
    while (true) {
      int n = poll.execute().getPolls();
      for (int i = 0; i < n; i++) {
        long wrId = wcs[i].getWr_id();
        int status = wcs[i].getStatus();
        try {
          handler.completed(wrId, status);
        } catch (RuntimeException e) {
          LOG.error("completion handler failed for wr_id {} status {}", wrId, status, e);
        }
      }
      if (n > 0) {
        polled += n;
        pollsWithWork++;
        total += n;
      }
      if (n < wcs.length) {
        return total;
      }
    }
  }

  /** Stops the thread, then destroys the CQ and its channel (every QP on it must be gone). */
  @Override
  public void close() {
    running = false;
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      LOG.error("completion thread {} did not stop; leaving its CQ allocated", thread.getName());
      return;
    }
    try {
      if (unacked > 0) {
        cq.ackEvents(unacked); // ibv_destroy_cq waits for every event to be acknowledged
        unacked = 0;
      }
      poll.free();
      arm.free();
      cq.destroyCQ();
      channel.destroyCompChannel();
    } catch (IOException | RuntimeException e) {
      LOG.warn("destroying the completion queue failed", e);
    }
  }

  boolean isAlive() {
    return thread.isAlive();
  }
}
