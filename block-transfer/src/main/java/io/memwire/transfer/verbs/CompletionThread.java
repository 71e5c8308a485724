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
 * The provider's one completion queue and the one thread that drains it for every queue pair of
 * the node. It sleeps on the completion channel (with a short timeout so it notices close),
 * re-arms notification and polls until the queue is empty. Handlers run on this thread and must
 * not block.
 */
final class CompletionThread implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(CompletionThread.class);
  private static final int WAIT_MS = 100;

  /** Receives each completion; wr_id and status are copied out of DiSNI's reused array. */
  interface Handler {
    void completed(long wrId, int status);
  }

  private final IbvCompChannel channel;
  private final IbvCQ cq;
  private final int size;
  private final IbvWC[] wcs = new IbvWC[32];
  private final SVCPollCq poll;
  private final SVCReqNotify arm;
  private final Handler handler;
  private final Thread thread;
  private volatile boolean running = true;
  private volatile long polled;

  CompletionThread(IbvContext context, int size, Handler handler, String name) throws IOException {
    this.handler = handler;
    this.size = size;
    this.channel = context.createCompChannel();
    IbvCQ created;
    try {
      created = context.createCQ(channel, size, 0);
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
    arm.execute();
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

  long polled() {
    return polled;
  }

  @Override
  public void run() {
    while (running) {
      try {
        if (channel.getCqEvent(cq, WAIT_MS)) {
          cq.ackEvents(1);
        }
        arm.execute();
        drain();
      } catch (IOException | RuntimeException e) {
        if (running) {
          LOG.error("completion queue processing failed; continuing", e);
        }
      }
    }
  }

  private void drain() throws IOException {
    while (true) {
      int n = poll.execute().getPolls();
      for (int i = 0; i < n; i++) {
        long wrId = wcs[i].getWr_id();
        int status = wcs[i].getStatus();
        polled++;
        try {
          handler.completed(wrId, status);
        } catch (RuntimeException e) {
          LOG.error("completion handler failed for wr_id {} status {}", wrId, status, e);
        }
      }
      if (n < wcs.length) {
        return;
      }
    }
  }

  /** Stops the thread, then destroys the CQ and its channel (every QP on it must be gone). */
  void close() {
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
