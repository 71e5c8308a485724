package io.memwire.transfer.verbs;

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
 * <p>State is guarded by the owning {@link VerbsConnection}'s lock; the CM channel and teardown
 * by this object's monitor.
 */
final class QpLink {
  private static final Logger LOG = LoggerFactory.getLogger(QpLink.class);

  /** A posted read and its sequence number. */
  static final class Posted {
    final long seq;
    final WireRead read;

    Posted(long seq, WireRead read) {
      this.seq = seq;
      this.read = read;
    }
  }

  final int id;
  private final RdmaEventChannel channel;
  private final RdmaCmId cmId;
  private final IbvQP qp;
  final ArrayDeque<Posted> outstanding = new ArrayDeque<>();
  private long nextSeq;
  /** No more posts: the QP errored or the connection failed. */
  boolean dead;
  private boolean destroyed;

  QpLink(int id, RdmaEventChannel channel, RdmaCmId cmId, IbvQP qp) {
    this.id = id;
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

  /** Posts {@code reads} as one chain, only the last signaled. Caller holds the connection lock. */
  void post(List<WireRead> reads) throws IOException {
    List<IbvSendWR> wrs = new ArrayList<>(reads.size());
    int last = reads.size() - 1;
    for (int i = 0; i <= last; i++) {
      WireRead r = reads.get(i);
      long seq = nextSeq++ & 0xffffffffL;
      IbvSendWR wr = new IbvSendWR();
      wr.setWr_id(((long) id << 32) | seq);
      wr.setOpcode(IbvSendWR.IBV_WR_RDMA_READ);
      wr.setSend_flags(i == last ? IbvSendWR.IBV_SEND_SIGNALED : 0);
      wr.getRdma().setRemote_addr(r.remoteAddress());
      wr.getRdma().setRkey((int) r.remoteKey());
      IbvSge sge = new IbvSge();
      sge.setAddr(r.destinationAddress());
      sge.setLength(r.length());
      sge.setLkey((int) r.destinationKey());
      LinkedList<IbvSge> sgl = new LinkedList<>();
      sgl.add(sge);
      wr.setSg_list(sgl);
      wr.setNum_sge(1);
      wrs.add(wr);
      outstanding.add(new Posted(seq, r));
    }
    SVCPostSend call = qp.postSend(wrs, null);
    try {
      call.execute();
    } finally {
      call.free();
    }
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
