package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import io.memwire.transfer.TransferConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Accepts peers on the node's listening RDMA CM id: each connect request gets a served queue pair
 * (with a secret set, only a request an authenticated handshake announced, see {@link VerbsAuth}),
 * and a peer's queue pair is destroyed again once its connection ends. Its thread ({@code
 * memwire-verbs-N-cm}) is the only one using the server event channel until {@link #close}; between
 * events it also sweeps the client links for disconnects ({@link LinkTable#sweep}).
 */
final class VerbsAcceptor {
  // The provider's logger name, so these messages read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  private static final int EV_ESTABLISHED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED.ordinal();
  private static final int EV_CONNECT_REQUEST =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_REQUEST.ordinal();
  private static final int EV_TIMEWAIT_EXIT =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_TIMEWAIT_EXIT.ordinal();

  private final RdmaEventChannel serverChannel;
  private final RdmaCmId listenId;
  private final InetSocketAddress localAddress;
  private final IbvPd pd;
  private final CompletionQueues<CompletionThread> queues;

  /** Checks peers before they may connect, when a secret is configured; else null. */
  private final VerbsAuth auth;

  private final LinkTable links;
  private final VerbsCounters counters;

  /** The provider's closed flag: the loop ends and no request is accepted once it is set. */
  private final BooleanSupplier closed;

  private final Thread thread;

  /** Server-side ids of accepted peers; only the CM thread touches them until close. */
  private final Set<RdmaCmId> accepted = ConcurrentHashMap.newKeySet();

  VerbsAcceptor(
      RdmaEventChannel serverChannel,
      RdmaCmId listenId,
      InetSocketAddress localAddress,
      IbvPd pd,
      CompletionQueues<CompletionThread> queues,
      VerbsAuth auth,
      LinkTable links,
      VerbsCounters counters,
      BooleanSupplier closed,
      String threadName) {
    this.serverChannel = serverChannel;
    this.listenId = listenId;
    this.localAddress = localAddress;
    this.pd = pd;
    this.queues = queues;
    this.auth = auth;
    this.links = links;
    this.counters = counters;
    this.closed = closed;
    this.thread = new Thread(this::cmLoop, threadName);
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** Waits (up to 10 s) for the thread to end once the provider is closed. */
  void awaitStopped() {
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Destroys every accepted peer's queue pair, then the listening id and the server channel; after
   * {@link #awaitStopped}, once the client links are retired.
   */
  void close() {
    for (RdmaCmId a : accepted.toArray(new RdmaCmId[0])) {
      dropAccepted(a);
    }
    CmSupport.destroyQuietly(listenId);
    try {
      serverChannel.destroyEventChannel();
    } catch (IOException | RuntimeException e) {
      LOG.debug("destroying the server event channel failed", e);
    }
  }

  /** Peers connected now. */
  int acceptedPeers() {
    return accepted.size();
  }

  /** Accepts peers and watches client links; the only thread using the server channel. */
  private void cmLoop() {
    while (!closed.getAsBoolean()) {
      try {
        RdmaCmEvent ev = serverChannel.getCmEvent(CmSupport.CM_WAIT_MS);
        if (ev != null) {
          serverEvent(ev);
        }
        links.sweep();
      } catch (IOException | RuntimeException e) {
        if (!closed.getAsBoolean()) {
          LOG.warn("RDMA connection-manager event handling failed; continuing", e);
        }
      }
    }
  }

  private void serverEvent(RdmaCmEvent ev) {
    int type = ev.getEvent();
    RdmaCmId peerId = ev.getConnIdPriv();
    if (type == EV_CONNECT_REQUEST) {
      if (peerId == null) {
        return;
      }
      if (auth != null && !admitted(peerId)) {
        return;
      }
      try {
        if (closed.getAsBoolean()) {
          throw new IOException("provider closing");
        }
        // The serving side only answers reads in the NIC: a QP with the smallest queues.
        IbvQP qp = peerId.createQP(pd, CmSupport.qpAttributes(1, queues.first()));
        if (qp == null) {
          throw new IOException("rdma_create_qp failed");
        }
        accepted.add(peerId);
        peerId.accept(CmSupport.connParam());
        counters.accepted();
      } catch (IOException | RuntimeException e) {
        LOG.warn("refusing an RDMA connection request on {}: {}", localAddress, e.toString());
        dropAccepted(peerId);
      }
    } else if (type == EV_ESTABLISHED) {
      LOG.debug("accepted an RDMA connection on {}", localAddress);
    } else if (type != EV_TIMEWAIT_EXIT && peerId != null && accepted.contains(peerId)) {
      // DISCONNECTED, CONNECT_ERROR, UNREACHABLE, REJECTED: the peer's QP is gone.
      LOG.debug(
          "accepted RDMA connection on {} ended: {}", localAddress, CmSupport.eventName(type));
      dropAccepted(peerId);
    }
  }

  /**
   * Whether an authenticated handshake announced this request's source; if not, the request is
   * destroyed (the peer sees a reject) before any queue pair exists for it.
   */
  private boolean admitted(RdmaCmId peerId) {
    SocketAddress from = null;
    try {
      from = peerId.getDestination();
    } catch (IOException | RuntimeException e) {
      LOG.debug("no source address on an RDMA connect request", e);
    }
    if (auth.admit(from instanceof InetSocketAddress ? (InetSocketAddress) from : null)) {
      return true;
    }
    LOG.warn(
        "refused an RDMA connect request from {} on {}: no authenticated handshake "
            + "announced it ({} is set)",
        from,
        localAddress,
        TransferConfig.AUTH_SECRET);
    CmSupport.destroyQuietly(peerId);
    return false;
  }

  private void dropAccepted(RdmaCmId peerId) {
    accepted.remove(peerId);
    try {
      peerId.disconnect();
    } catch (IOException | RuntimeException ignored) {
      // may not be connected
    }
    if (peerId.getQp() != null) {
      try {
        peerId.destroyQP();
      } catch (IOException | RuntimeException e) {
        LOG.debug("destroying an accepted QP failed", e);
      }
    }
    CmSupport.destroyQuietly(peerId);
  }
}
