package io.memwire.transfer.verbs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.SVCPostSend;
import io.memwire.transfer.spi.WireRead;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One incarnation of a client queue pair: its own rdma_cm event channel and id, the QP, and the
 * reads posted on it in order. A work request id is {@code linkId << 32 | sequence}, so a
 * completion finds its link without trusting the completion's qp_num (DiSNI leaves it stale on
 * error completions). Reads complete in posting order on a reliable connection, so a signaled
 * completion also completes every unsignaled read before it.
 *
 * <p>The outstanding reads and their sequence numbers are guarded by the owning {@link
 * VerbsConnection}'s lock ({@link #enqueue}, {@link #completeThrough}, {@link #takeOutstanding});
 * the calls into DiSNI ({@link #execute}, the CM channel, teardown) by this object's monitor, which
 * the connection's lock is never held across, so a completion thread never waits for a post. The
 * link holds its place on a completion queue ({@link #slot}) until {@link ClientQueuePairs#retire}
 * destroys it.
 */
final class QpLink {
  private static final Logger LOG = LoggerFactory.getLogger(QpLink.class);

  final int id;
  private final RdmaEventChannel channel;
  private final RdmaCmId cmId;
  private final IbvQP qp;

  /** Its place on a completion queue, released by {@link ClientQueuePairs#retire} with the QP. */
  final CompletionQueues<CompletionThread>.Slot slot;

  /**
   * Reads posted and not yet completed, in posting order; the first has sequence {@link #headSeq}.
   */
  final ArrayDeque<WireRead> outstanding = new ArrayDeque<>();

  /** Sequence number of the first outstanding read (32-bit, wraps). */
  private long headSeq;

  /**
   * Posting calls by chain length, built on first use and then only rewritten in place: DiSNI
   * serializes a work-request list into native memory when the call is created, so reusing it saves
   * that (and a dozen objects) per post.
   */
  @GuardedBy("this")
  private final SVCPostSend[] calls;

  private final int maxChain;

  /** The serving port's MTUs as its handshake told them ({@link PortMtu#UNKNOWN} if it did not). */
  final PortMtu peerMtu;

  /** No more posts: the QP errored or the connection failed. */
  boolean dead;

  @GuardedBy("this")
  private boolean destroyed;

  QpLink(
      int id,
      RdmaEventChannel channel,
      RdmaCmId cmId,
      IbvQP qp,
      int maxChain,
      CompletionQueues<CompletionThread>.Slot slot,
      PortMtu peerMtu) {
    this.id = id;
    this.peerMtu = peerMtu;
    this.slot = slot;
    this.maxChain = Math.max(1, maxChain);
    this.calls = new SVCPostSend[this.maxChain + 1];
    this.channel = channel;
    this.cmId = cmId;
    this.qp = qp;
  }

  static int linkOf(long wrId) {
    return (int) (wrId >>> 32);
  }

  static long seqOf(long wrId) {
    return wrId & 0xffffffffL;
  }

  /**
   * Makes {@code reads} outstanding on this link, in order, before they are posted (a completion
   * may follow the post at once; a failed post leaves them here for the connection's quiesce);
   * returns the sequence number of the first, for {@link #execute}. Caller holds the connection
   * lock.
   */
  long enqueue(List<WireRead> reads) {
    long seq = (headSeq + outstanding.size()) & 0xffffffffL;
    outstanding.addAll(reads);
    return seq;
  }

  /**
   * Posts {@code reads}, enqueued from sequence {@code firstSeq}, as one chain (longer lists as
   * chains of at most the send-queue depth), only the last of each chain signaled; returns the
   * number of chains (post calls), 0 when the link was destroyed meanwhile (the connection's
   * quiesce then took the reads back). Called without the connection's lock, by one poster at a
   * time.
   */
  synchronized int execute(List<WireRead> reads, long firstSeq) throws IOException {
    if (destroyed) {
      return 0;
    }
    int from = 0;
    int chains = 0;
    while (from < reads.size()) {
      int n = Math.min(maxChain, reads.size() - from);
      postChain(reads, from, n, (firstSeq + from) & 0xffffffffL);
      from += n;
      chains++;
    }
    return chains;
  }

  @GuardedBy("this")
  private void postChain(List<WireRead> reads, int from, int n, long seq) throws IOException {
    SVCPostSend call = calls[n];
    if (call == null) {
      call = qp.postSend(template(n), null);
      calls[n] = call;
    }
    for (int i = 0; i < n; i++) {
      WireRead r = reads.get(from + i);
      SVCPostSend.SendWRMod wr = call.getWrMod(i);
      wr.setWr_id(((long) id << 32) | ((seq + i) & 0xffffffffL));
      wr.setSend_flags(i == n - 1 ? IbvSendWR.IBV_SEND_SIGNALED : 0);
      wr.getRdmaMod().setRemote_addr(r.remoteAddress());
      wr.getRdmaMod().setRkey((int) r.remoteKey());
      SVCPostSend.SgeMod sge = wr.getSgeMod(0);
      sge.setAddr(r.destinationAddress());
      sge.setLength(r.length());
      sge.setLkey((int) r.destinationKey());
    }
    call.execute();
  }

  /** A chain of {@code n} RDMA read requests with one scatter entry each, fields filled later. */
  private static List<IbvSendWR> template(int n) {
    List<IbvSendWR> wrs = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      IbvSendWR wr = new IbvSendWR();
      wr.setOpcode(IbvSendWR.IBV_WR_RDMA_READ);
      LinkedList<IbvSge> sgl = new LinkedList<>();
      sgl.add(new IbvSge());
      wr.setSg_list(sgl);
      wr.setNum_sge(1);
      wrs.add(wr);
    }
    return wrs;
  }

  /**
   * Removes the reads up to and including sequence {@code seq} (the signaled one) from the
   * outstanding queue: those before it into {@code before}, which completed successfully because a
   * reliable connection completes in order. Returns the read of {@code seq}, or null when it is not
   * outstanding. Caller holds the connection lock.
   */
  WireRead completeThrough(long seq, List<WireRead> before) {
    long ahead = (seq - headSeq) & 0xffffffffL;
    if (ahead >= outstanding.size()) {
      return null;
    }
    for (long i = 0; i < ahead; i++) {
      before.add(outstanding.poll());
    }
    headSeq = (seq + 1) & 0xffffffffL;
    return outstanding.poll();
  }

  /** Empties the outstanding queue into {@code out}. Caller holds the connection lock. */
  void takeOutstanding(List<WireRead> out) {
    headSeq = (headSeq + outstanding.size()) & 0xffffffffL;
    out.addAll(outstanding);
    outstanding.clear();
  }

  /** A pending CM event on this link's channel, without waiting; null when none or destroyed. */
  synchronized RdmaCmEvent pollEvent() throws IOException {
    if (destroyed) {
      return null;
    }
    return channel.getCmEvent(0);
  }

  /**
   * Disconnects and frees the QP, the cm id and the event channel. Idempotent. Once this returns
   * the NIC no longer writes into any destination of this link.
   */
  synchronized void destroy() {
    if (destroyed) {
      return;
    }
    destroyed = true;
    try {
      cmId.disconnect();
    } catch (IOException | RuntimeException e) {
      LOG.debug("rdma_disconnect of link {} failed", id, e);
    }
    try {
      cmId.destroyQP();
    } catch (IOException | RuntimeException e) {
      LOG.warn("destroying the QP of link {} failed", id, e);
    }
    for (SVCPostSend c : calls) {
      if (c != null) {
        try {
          c.free();
        } catch (RuntimeException e) {
          LOG.debug("freeing a post-send call of link {} failed", id, e);
        }
      }
    }
    try {
      cmId.destroyId();
    } catch (IOException | RuntimeException e) {
      LOG.warn("destroying the cm id of link {} failed", id, e);
    }
    try {
      channel.destroyEventChannel();
    } catch (IOException | RuntimeException e) {
      LOG.warn("destroying the event channel of link {} failed", id, e);
    }
  }
}
