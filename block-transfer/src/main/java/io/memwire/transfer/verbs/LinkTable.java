package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.RdmaCmEvent;
import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The client queue pairs (links) alive on this node, the connection each belongs to, and the open
 * connections. A completion finds its connection here by the link id in its work request id; the
 * connection-manager thread sweeps the connections' links for disconnects. Thread-safe: concurrent
 * maps, read by the completion threads while callers and the connector thread change them.
 */
final class LinkTable {
  private static final int EV_DISCONNECTED =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_DISCONNECTED.ordinal();
  private static final int EV_DEVICE_REMOVAL =
      RdmaCmEvent.EventType.RDMA_CM_EVENT_DEVICE_REMOVAL.ordinal();

  private final AtomicInteger nextLinkId = new AtomicInteger();
  private final Map<Integer, VerbsConnection> linkOwners = new ConcurrentHashMap<>();
  private final Map<Integer, QpLink> linkById = new ConcurrentHashMap<>();
  private final Set<VerbsConnection> connections = ConcurrentHashMap.newKeySet();

  /** An id for a new link (31 bits; it is the upper half of the link's work request ids). */
  int nextId() {
    return nextLinkId.incrementAndGet() & 0x7fffffff;
  }

  /** A link just connected; its owner follows through {@link #linkOpened}. */
  void added(QpLink link) {
    linkById.put(link.id, link);
  }

  /** Makes {@code owner} the connection that {@code link}'s completions go to. */
  void linkOpened(QpLink link, VerbsConnection owner) {
    linkOwners.put(link.id, owner);
  }

  /** Forgets a destroyed link; its late completions are dropped. */
  void linkRetired(QpLink l) {
    linkById.remove(l.id);
    linkOwners.remove(l.id);
  }

  void connectionOpened(VerbsConnection c) {
    connections.add(c);
  }

  void connectionFailed(VerbsConnection c) {
    connections.remove(c);
  }

  /** Completion-thread entry: routes by the link id in the wr_id. */
  void completed(long wrId, int status) {
    int linkId = QpLink.linkOf(wrId);
    QpLink link = linkById.get(linkId);
    VerbsConnection owner = linkOwners.get(linkId);
    if (link == null || owner == null) {
      return; // a late completion of a retired link
    }
    owner.completed(link, QpLink.seqOf(wrId), status);
  }

  /** Fails the connection of every link whose peer disconnected or whose device went away. */
  void sweep() {
    for (VerbsConnection c : connections) {
      QpLink l = c.currentLink();
      if (l == null) {
        continue;
      }
      RdmaCmEvent ev;
      try {
        ev = l.pollEvent();
      } catch (IOException e) {
        continue;
      }
      if (ev != null && (ev.getEvent() == EV_DISCONNECTED || ev.getEvent() == EV_DEVICE_REMOVAL)) {
        c.linkLost(
            l, "the peer closed the RDMA connection (" + CmSupport.eventName(ev.getEvent()) + ")");
      }
    }
  }

  /** The open connections now (a copy). */
  VerbsConnection[] connections() {
    return connections.toArray(new VerbsConnection[0]);
  }

  /** The live links now (a copy). */
  QpLink[] links() {
    return linkById.values().toArray(new QpLink[0]);
  }

  int connectionCount() {
    return connections.size();
  }

  int linkCount() {
    return linkById.size();
  }
}
