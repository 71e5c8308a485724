package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvQPInitAttr;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaConnParam;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Small rdma_cm and verbs calls shared by the node's setup, the acceptor and the client side: event
 * names for messages, queue pair attributes, connection parameters and best-effort frees.
 */
final class CmSupport {
  // The provider's logger name, so these messages read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  /** How long one wait for a CM event lasts, in milliseconds, before a loop checks its state. */
  static final int CM_WAIT_MS = 50;

  private CmSupport() {}

  static String eventName(int type) {
    RdmaCmEvent.EventType[] all = RdmaCmEvent.EventType.values();
    return type >= 0 && type < all.length ? all[type].name() : "event " + type;
  }

  /** A reliable-connected queue pair of {@code sendDepth} reads on {@code cq}'s queue. */
  static IbvQPInitAttr qpAttributes(int sendDepth, CompletionThread cq) {
    IbvQPInitAttr attr = new IbvQPInitAttr();
    attr.cap().setMax_send_wr(sendDepth);
    attr.cap().setMax_recv_wr(1);
    attr.cap().setMax_send_sge(1);
    attr.cap().setMax_recv_sge(1);
    attr.setQp_type(IbvQP.IBV_QPT_RC);
    attr.setSend_cq(cq.cq());
    attr.setRecv_cq(cq.cq());
    return attr;
  }

  /** Connection parameters for both sides: the most transport and RNR retries. */
  static RdmaConnParam connParam() throws IOException {
    RdmaConnParam param = new RdmaConnParam();
    param.setRetry_count((byte) 7);
    param.setRnr_retry_count((byte) 7);
    return param;
  }

  static void destroyQuietly(RdmaCmId cm) {
    if (cm != null) {
      try {
        cm.destroyId();
      } catch (IOException | RuntimeException ignored) {
        // best effort
      }
    }
  }

  static void deallocQuietly(IbvPd p) {
    if (p != null) {
      try {
        p.deallocPd();
      } catch (Exception e) {
        LOG.warn("ibv_dealloc_pd failed", e);
      }
    }
  }
}
