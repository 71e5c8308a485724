package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmEvent;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferTimeoutException;
import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.NicCounters;
import io.memwire.transfer.settings.TransportSettings;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client side of queue pairs: opens a link to a peer (a place on a completion queue, then
 * resolve, route, the TCP handshake and path MTU check of {@link ConnectHandshake}, and connect
 * within the connect timeout, on the link's own CM event channel driven by the calling thread,
 * because DiSNI's own endpoint connect can wait forever on a route or address error), and retires
 * links again, now or on the connector thread, where it also re-opens a connection's link after a
 * remote access error.
 */
final class ClientQueuePairs {
  // The provider's logger name, so these messages read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  private static final int EV_ADDR_RESOLVED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED.ordinal();
  private static final int EV_ROUTE_RESOLVED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED.ordinal();
  private static final int EV_ESTABLISHED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED.ordinal();

  private final TransferConfig config;
  private final VerbsProbe.Binding binding;
  private final IbvContext context;
  private final IbvPd pd;
  private final CompletionQueues<CompletionThread> queues;
  private final int qpDepth;
  private final int cqEntries;

  private final LinkTable links;
  private final VerbsCounters counters;

  /** The provider's connector thread: reconnects and retirements off the completion threads. */
  private final Executor connector;

  private final AtomicBoolean refusalLogged = new AtomicBoolean();

  /** The TCP handshake before each connect request, and the MTU refusal on its answer. */
  private final ConnectHandshake handshake;

  /** The bound port's counters, which explain a connect or read that stalls. */
  private final FabricWatch fabric;

  ClientQueuePairs(
      TransferConfig config,
      VerbsProbe.Binding binding,
      IbvContext context,
      IbvPd pd,
      CompletionQueues<CompletionThread> queues,
      int qpDepth,
      int cqEntries,
      byte[] secret,
      LinkTable links,
      VerbsCounters counters,
      Executor connector) {
    this.config = config;
    this.binding = binding;
    this.context = context;
    this.pd = pd;
    this.queues = queues;
    this.qpDepth = qpDepth;
    this.cqEntries = cqEntries;
    this.links = links;
    this.counters = counters;
    this.connector = connector;
    this.fabric = new FabricWatch(NicCounters.system(), binding);
    this.handshake = new ConnectHandshake(config, binding, secret);
  }

  /** The bound port's counters, for the connections' stalled reads. */
  FabricWatch fabric() {
    return fabric;
  }

  /** Outgoing queue pairs this node may hold at once: its hard connection limit. */
  int connectionLimit() {
    return queues.perQueue() * queues.maxQueues();
  }

  /**
   * Resolves, routes and connects a fresh queue pair to {@code peer} within the connect timeout,
   * driving the link's own CM event channel from this thread.
   */
  QpLink openLink(InetSocketAddress peer) throws TransferException {
    CompletionQueues<CompletionThread>.Slot slot = placeQueuePair(peer);
    try {
      return openLink(peer, slot);
    } catch (TransferException | RuntimeException e) {
      queues.release(slot);
      throw e;
    }
  }

  /** Registers a re-established link's owner (called by the connection after openLink). */
  void linkOpened(QpLink link, VerbsConnection owner) {
    links.linkOpened(link, owner);
  }

  void connectionFailed(VerbsConnection c) {
    links.connectionFailed(c);
  }

  /**
   * Re-opens {@code c}'s link on the connector thread after a remote access error on {@code old}.
   */
  void reconnectLater(VerbsConnection c, QpLink old) {
    try {
      connector.execute(() -> c.reconnect(old));
    } catch (RejectedExecutionException e) {
      c.fail(new TransferConnectionException("verbs provider closed", c.peer(), null));
    }
  }

  /** Destroys a link whose QP is already in the error state, off the completion thread. */
  void retireLater(QpLink l) {
    try {
      connector.execute(() -> retire(l));
    } catch (RejectedExecutionException e) {
      retire(l);
    }
  }

  /** Destroys a link now, forgets it and frees its place on its completion queue. */
  void retire(QpLink l) {
    l.destroy();
    links.linkRetired(l);
    queues.release(l.slot);
  }

  /**
   * A place on a completion queue for one more client queue pair, opening a queue when all are
   * full; at the hard limit a clear, counted refusal, before any network work.
   */
  private CompletionQueues<CompletionThread>.Slot placeQueuePair(InetSocketAddress peer)
      throws TransferConnectionException {
    try {
      return queues.acquire();
    } catch (CompletionQueues.LimitReachedException e) {
      counters.connectionRefused();
      String why =
          "verbs connection limit reached: "
              + e.getMessage()
              + ", so this node holds at most "
              + connectionLimit()
              + " outgoing queue pairs ("
              + TransportSettings.VERBS_MAX_COMPLETION_QUEUES.name()
              + "="
              + queues.maxQueues()
              + ", "
              + cqEntries
              + " completion-queue entries, "
              + qpDepth
              + " per queue pair); lower "
              + TransferConfig.CONNECTION_IDLE_TIMEOUT
              + " so idle ones close, or raise the limit";
      if (refusalLogged.compareAndSet(false, true)) {
        LOG.warn("{} (further refusals are counted as verbsConnectionsRefused)", why);
      } else {
        LOG.debug(why);
      }
      throw new TransferConnectionException(why, peer, null);
    } catch (IOException e) {
      throw new TransferConnectionException(
          "cannot create another completion queue on "
              + binding.device().name()
              + ": "
              + e.getMessage(),
          peer,
          e);
    }
  }

  private QpLink openLink(InetSocketAddress peer, CompletionQueues<CompletionThread>.Slot slot)
      throws TransferException {
    long timeoutMs = config.connectTimeout().toMillis();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    RdmaEventChannel ch;
    try {
      ch = RdmaEventChannel.createEventChannel();
    } catch (IOException e) {
      throw new TransferConnectionException(
          "cannot create an RDMA event channel: " + e.getMessage(), peer, e);
    }
    if (ch == null) {
      throw new TransferConnectionException("cannot create an RDMA event channel", peer, null);
    }
    RdmaCmId cm = null;
    IbvQP qp = null;
    CounterSample atStart = fabric.sample();
    PortMtu peerMtu = PortMtu.UNKNOWN;
    try {
      cm = ch.createId(RdmaCm.RDMA_PS_TCP);
      // Bound to our address so the route leaves through our device (and our PD and CQ fit).
      cm.bindAddr(new InetSocketAddress(binding.address(), 0));
      cm.resolveAddr(null, peer, (int) Math.max(100, timeoutMs));
      await(ch, EV_ADDR_RESOLVED, deadline, timeoutMs, "address resolution", peer);
      cm.resolveRoute((int) Math.max(100, remainingMs(deadline)));
      await(ch, EV_ROUTE_RESOLVED, deadline, timeoutMs, "route resolution", peer);
      IbvContext ctx = cm.getVerbs();
      if (ctx == null || ctx.getCmd_fd() != context.getCmd_fd()) {
        throw new TransferConnectionException(
            "the route to the peer does not leave through " + binding.device().name(), peer, null);
      }
      peerMtu = handshake.exchange(cm.getSource(), peer, deadline);
      handshake.refuseLargerPathMtu(peer, peerMtu);
      qp = cm.createQP(pd, CmSupport.qpAttributes(qpDepth, slot.queue()));
      if (qp == null) {
        throw new TransferConnectionException("rdma_create_qp failed", peer, null);
      }
      cm.connect(CmSupport.connParam());
      await(ch, EV_ESTABLISHED, deadline, timeoutMs, "connection establishment", peer);
      QpLink link = new QpLink(links.nextId(), ch, cm, qp, qpDepth, slot, peerMtu);
      links.added(link);
      return link;
    } catch (TransferTimeoutException e) {
      abandon(ch, cm, qp);
      // A connect request no one answers: the counters tell a firewall from a slow peer.
      String why = fabric.explain(atStart, true, peerMtu.active());
      if (why.isEmpty()) {
        throw e;
      }
      String own = e.getMessage();
      String suffix = " (peer " + peer + ")";
      if (own.endsWith(suffix)) { // the exception names the peer again at the end
        own = own.substring(0, own.length() - suffix.length());
      }
      TransferTimeoutException explained = new TransferTimeoutException(own + why, peer);
      explained.addSuppressed(e);
      throw explained;
    } catch (TransferException e) {
      abandon(ch, cm, qp);
      throw e;
    } catch (IOException | RuntimeException e) {
      abandon(ch, cm, qp);
      throw new TransferConnectionException("cannot connect over RDMA: " + e.getMessage(), peer, e);
    }
  }

  private static long remainingMs(long deadline) {
    return TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
  }

  private static void await(
      RdmaEventChannel ch,
      int expected,
      long deadline,
      long timeoutMs,
      String phase,
      InetSocketAddress peer)
      throws IOException, TransferException {
    while (true) {
      long left = remainingMs(deadline);
      if (left <= 0) {
        throw new TransferTimeoutException(
            "RDMA "
                + phase
                + " did not complete within "
                + timeoutMs
                + " ms ("
                + TransportSettings.CONNECT_TIMEOUT.name()
                + ")",
            peer);
      }
      RdmaCmEvent ev = ch.getCmEvent((int) Math.min(left, CmSupport.CM_WAIT_MS));
      if (ev == null) {
        continue;
      }
      int type = ev.getEvent();
      if (type == expected) {
        return;
      }
      String name = CmSupport.eventName(type);
      String hint =
          type == RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED.ordinal()
              ? ": nothing listens there or the peer refused (is it a Memwire verbs node?)"
              : type == RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_ERROR.ordinal()
                      || type == RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_ERROR.ordinal()
                  ? ": no RDMA path to the peer's address"
                  : "";
      throw new TransferConnectionException(
          "RDMA " + phase + " failed with " + name + hint, peer, null);
    }
  }

  private static void abandon(RdmaEventChannel ch, RdmaCmId cm, IbvQP qp) {
    if (cm != null) {
      if (qp != null) {
        try {
          cm.destroyQP();
        } catch (IOException | RuntimeException ignored) {
          // best effort on a failed connect
        }
      }
      CmSupport.destroyQuietly(cm);
    }
    try {
      ch.destroyEventChannel();
    } catch (IOException | RuntimeException ignored) {
      // best effort on a failed connect
    }
  }
}
