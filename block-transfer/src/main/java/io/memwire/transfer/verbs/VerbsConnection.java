package io.memwire.transfer.verbs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.spi.AbstractProviderConnection;
import io.memwire.transfer.spi.WireRead;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reading side of one peer over verbs. A remote access error moves the queue pair into the
 * error state on both sides; the connection then fails only that read, keeps the reads flushed
 * behind it, opens a fresh queue pair in the background and posts them there, so it stays usable as
 * the tcp provider's does. Retry-exceeded, flush without cause and other errors fail the connection
 * through {@link AbstractProviderConnection#fail}: {@link #quiesce} destroys the queue pair and
 * hands back every outstanding read, which then fail once. {@link CompletionErrors} says what each
 * status means and {@link StallBaseline} explains a stalled read.
 *
 * <p>Reads are completed or failed only outside {@link #lock}, because completing one may post the
 * next on the same thread; reads posted that way are gathered and go out as one chain.
 *
 * <p>No lock is held across a call into DiSNI: a post makes its reads outstanding on the link under
 * {@link #lock} (short), then the one thread holding the posting role ({@link #posting}) calls
 * {@code ibv_post_send} outside it. A thread that finds another posting leaves its reads on {@link
 * #toPost} for that one and returns: a completion thread never waits for a poster, and a slow post
 * stalls no completion.
 */
final class VerbsConnection extends AbstractProviderConnection {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsConnection.class);

  private final ClientQueuePairs queuePairs;
  private final VerbsCounters counters;
  private final Object lock = new Object();

  @GuardedBy("lock")
  private QpLink link;

  /** Reads waiting for a queue pair while one is being re-established. */
  @GuardedBy("lock")
  private final ArrayDeque<WireRead> pending = new ArrayDeque<>();

  /** Reads handed to {@link #post}, taken in order by the thread holding {@link #posting}. */
  private final ConcurrentLinkedQueue<WireRead> toPost = new ConcurrentLinkedQueue<>();

  /** Held by the one thread posting {@link #toPost} now; nobody waits for it. */
  private final AtomicBoolean posting = new AtomicBoolean();

  /**
   * Reads ended by a fatal completion, held until {@link #quiesce} hands them out. A link whose QP
   * already reported the error stays {@link #link} (marked dead) until then.
   */
  @GuardedBy("lock")
  private final List<WireRead> stranded = new ArrayList<>();

  private static final List<WireRead> EMPTY_BEFORE = List.of();

  /**
   * The completion thread while it hands this connection's completed reads to their owners.
   * Completing a read frees a slot and the owner posts the next one from inside that call; such
   * posts are collected in {@link #deferred} and go out afterwards as one chain with one signaled
   * request, instead of one post call and one completion per read.
   */
  private volatile Thread completer;

  /** Posts made by {@link #completer} while it completes reads; only that thread touches it. */
  private List<WireRead> deferred;

  /** What a stalled read is explained against: the port's counters since, the peer's MTU. */
  private final StallBaseline stall;

  VerbsConnection(
      ClientQueuePairs queuePairs, VerbsCounters counters, InetSocketAddress peer, QpLink link) {
    super(peer);
    this.queuePairs = queuePairs;
    this.counters = counters;
    this.link = link;
    this.stall = new StallBaseline(queuePairs.fabric(), link.peerMtu.active());
  }

  /** The fabric cause of a stalled read the bound port's counters show ({@link StallBaseline}). */
  @Override
  public String stallDetail() {
    return stall.explain();
  }

  QpLink currentLink() {
    synchronized (lock) {
      return link;
    }
  }

  /**
   * False: the responses of one chain of RDMA Reads may be fetched out of order, and reads may be
   * re-posted on a fresh queue pair, so an ordered read waits for the body's completions.
   */
  @Override
  public boolean servesInPostOrder() {
    return false;
  }

  @Override
  public void post(List<WireRead> reads) {
    if (completer == Thread.currentThread()) {
      if (deferred == null) {
        deferred = new ArrayList<>();
      }
      deferred.addAll(reads);
      return;
    }
    List<WireRead> valid = new ArrayList<>(reads.size());
    for (WireRead r : reads) {
      if ((r.remoteKey() >>> 32) != 0) {
        // Verbs keys are 32-bit rkeys: a wider key was never issued by a verbs node.
        r.fail(
            new RemoteAccessException(
                RemoteAccessException.Reason.UNKNOWN_KEY,
                "key 0x" + Long.toHexString(r.remoteKey()) + " is not a 32-bit rkey",
                r.source(),
                peer()));
      } else {
        valid.add(r);
      }
    }
    if (valid.isEmpty()) {
      return;
    }
    toPost.addAll(valid);
    drain();
  }

  /**
   * Posts what {@link #toPost} holds unless another thread is posting (it posts these too before it
   * lets go): never waits for a poster.
   */
  private void drain() {
    while (!toPost.isEmpty() && posting.compareAndSet(false, true)) {
      try {
        postQueued();
      } finally {
        posting.set(false);
      }
    }
  }

  /** Posts every read queued now; only the thread holding {@link #posting}. */
  private void postQueued() {
    List<WireRead> batch = new ArrayList<>();
    for (WireRead r; (r = toPost.poll()) != null; ) {
      batch.add(r);
    }
    if (batch.isEmpty()) {
      return;
    }
    boolean rejected = false;
    QpLink l = null;
    long firstSeq = 0;
    synchronized (lock) {
      if (!isOpen()) {
        rejected = true;
      } else if (link == null) {
        pending.addAll(batch);
      } else {
        // Outstanding before the post: a completion may follow it at once, and a failed post
        // leaves them there for the quiesce.
        l = link;
        firstSeq = l.enqueue(batch);
      }
    }
    if (rejected) {
      reject(batch);
      return;
    }
    if (l == null) {
      return;
    }
    try {
      counters.posted(l.execute(batch, firstSeq), batch.size());
    } catch (IOException | RuntimeException e) {
      fail(
          new TransferConnectionException(
              "posting " + batch.size() + " RDMA reads failed: " + e.getMessage(), peer(), e));
    }
  }

  @GuardedBy("lock")
  private List<WireRead> takeAll(QpLink l) {
    List<WireRead> out = new ArrayList<>();
    if (l != null) {
      l.takeOutstanding(out);
    }
    out.addAll(pending);
    pending.clear();
    return out;
  }

  /** A completion for {@code l}; runs on the completion thread and never blocks. */
  void completed(QpLink l, long seq, int status) {
    // Usually one signaled read with no unsignaled ones before it: no list then.
    List<WireRead> before = EMPTY_BEFORE;
    WireRead ok = null;
    WireRead refused = null;
    RemoteAccessException refusal = null;
    TransferConnectionException fatal = null;
    boolean reconnect = false;
    synchronized (lock) {
      if (l.dead) {
        return; // flushed behind an error already handled, or after the link was retired
      }
      if (l.outstanding.size() > 1) {
        before = new ArrayList<>();
      }
      WireRead hit = l.completeThrough(seq, before);
      if (hit == null) {
        LOG.warn("completion for unknown read {} on link {} to {}", seq, l.id, peer());
      } else if (status == CompletionErrors.SUCCESS) {
        ok = hit;
      } else if (CompletionErrors.refused(status)) {
        refused = hit;
        refusal = CompletionErrors.refusal(status, hit, peer());
        l.dead = true;
        // The rest were flushed, not refused: they go out again on a fresh queue pair.
        List<WireRead> rest = new ArrayList<>();
        l.takeOutstanding(rest);
        for (int i = rest.size() - 1; i >= 0; i--) {
          pending.addFirst(rest.get(i));
        }
        if (link == l) {
          link = null;
          reconnect = isOpen();
        }
      } else {
        fatal = CompletionErrors.fatal(status, peer());
        // The QP is in the error state: the NIC writes nothing more. Its reads wait for quiesce.
        l.dead = true;
        stranded.add(hit);
        if (link != l) {
          l.takeOutstanding(stranded);
        }
      }
    }
    if (ok != null) {
      stall.progressed();
      completer = Thread.currentThread();
      try {
        for (WireRead r : before) {
          r.complete();
        }
        ok.complete();
      } finally {
        completer = null;
      }
      List<WireRead> next = deferred;
      deferred = null;
      if (next != null) {
        post(next);
      }
    } else {
      for (WireRead r : before) {
        r.complete();
      }
    }
    if (refused != null) {
      counters.accessError();
      refused.fail(refusal);
    }
    if (reconnect) {
      queuePairs.reconnectLater(this, l);
    }
    if (fatal != null) {
      fail(fatal);
    }
  }

  /** Runs on the provider's connector thread after a remote access error. */
  void reconnect(QpLink old) {
    long start = System.nanoTime();
    queuePairs.retire(old);
    QpLink fresh;
    try {
      fresh = queuePairs.openLink(peer());
      queuePairs.linkOpened(fresh, this);
      counters.reconnected();
    } catch (TransferException e) {
      fail(
          new TransferConnectionException(
              "re-establishing the queue pair after a remote access error failed: "
                  + e.getMessage(),
              peer(),
              e));
      return;
    }
    List<WireRead> repost;
    synchronized (lock) {
      if (!isOpen()) {
        repost = null;
      } else {
        link = fresh;
        stall.peerMtu(fresh.peerMtu.active());
        repost = new ArrayList<>(pending);
        pending.clear();
      }
    }
    if (repost == null) {
      queuePairs.retire(fresh); // failed meanwhile: quiesce already took the pending reads
    } else {
      toPost.addAll(repost);
      drain();
      LOG.debug(
          "queue pair to {} re-established in {} ms after a remote access error; {} reads "
              + "re-posted",
          peer(),
          (System.nanoTime() - start) / 1_000_000,
          repost.size());
    }
  }

  /** A DISCONNECTED (or device removal) event on {@code l}'s channel. */
  void linkLost(QpLink l, String why) {
    synchronized (lock) {
      if (link != l) {
        return; // an old link being replaced
      }
    }
    fail(new TransferConnectionException(why, peer(), null));
  }

  /**
   * Destroys the current queue pair (or leaves one the NIC already put in the error state to the
   * connector thread) and hands back every read outstanding on it, waiting for it, or stranded by a
   * fatal completion.
   */
  @Override
  protected void quiesce(TransferException cause, List<WireRead> held) {
    QpLink l;
    boolean inError;
    synchronized (lock) {
      l = link;
      link = null;
      inError = l != null && l.dead;
      if (l != null) {
        l.dead = true;
      }
      held.addAll(stranded);
      stranded.clear();
      held.addAll(takeAll(l));
    }
    if (l != null) {
      if (inError) {
        queuePairs.retireLater(l); // off the completion thread; the QP writes nothing more
      } else {
        queuePairs.retire(l); // destroys the QP: no write lands in a destination after this
      }
    }
    queuePairs.connectionFailed(this);
  }

  @Override
  public String toString() {
    return "verbs connection to " + peer();
  }
}
