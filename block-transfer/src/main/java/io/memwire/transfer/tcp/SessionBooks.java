package io.memwire.transfer.tcp;

import io.memwire.transfer.TransferConfig;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The tcp provider's books of the connections it accepted: every open {@link ResponderSession},
 * those still in their handshake, and how many hold one of the {@code maxConnections} serving
 * slots. The {@link Acceptor} reads them to refuse or evict; a session's handshake takes and gives
 * back its slot.
 *
 * <p>Threads: any thread (the acceptor's loop, the sessions' loops); no lock, the sets are
 * concurrent and the slot count moves by compare-and-set, so a count read is a moment's view.
 */
final class SessionBooks {
  private final TransferConfig config;

  /** Counts a connection refused at {@code maxConnections} (the provider's counter). */
  private final LongAdder connectionsRefused;

  private final Set<ResponderSession> sessions = ConcurrentHashMap.newKeySet();

  /** Sessions still in their handshake: a session leaves as its state leaves HELLO/AUTH. */
  private final Set<ResponderSession> handshaking = ConcurrentHashMap.newKeySet();

  /** Sessions past their handshake (authenticated when there is a secret). */
  private final AtomicInteger serving = new AtomicInteger();

  SessionBooks(TransferConfig config, LongAdder connectionsRefused) {
    this.config = config;
    this.connectionsRefused = connectionsRefused;
  }

  int servingCount() {
    return serving.get();
  }

  int sessionCount() {
    return sessions.size();
  }

  /** Books a new session, in its handshake. */
  void addSession(ResponderSession s) {
    sessions.add(s);
    handshaking.add(s);
  }

  /** Connections in their handshake now. */
  int handshakeCount() {
    return handshaking.size();
  }

  /** The sessions in their handshake now (a live view). */
  Iterable<ResponderSession> handshakes() {
    return handshaking;
  }

  /** The session's state left its handshake (served, refused, evicted or closed). */
  void handshakeEnded(ResponderSession s) {
    handshaking.remove(s);
  }

  void removeSession(ResponderSession s) {
    sessions.remove(s);
    handshaking.remove(s);
  }

  /**
   * Connections at once in their handshake: a small share of {@code maxConnections}, so peers that
   * never authenticate cannot take the slots of peers that do.
   */
  int maxHandshakes() {
    int max = config.maxConnections();
    return Math.min(max, Math.max(16, max / 16));
  }

  /** Takes a serving slot for a session whose handshake succeeded; false at the limit. */
  boolean admitServing() {
    while (true) {
      int n = serving.get();
      if (n >= config.maxConnections()) {
        connectionsRefused.increment();
        return false;
      }
      if (serving.compareAndSet(n, n + 1)) {
        return true;
      }
    }
  }

  /** Gives back a slot {@link #admitServing} took for a session that was evicted meanwhile. */
  void releaseServing() {
    serving.decrementAndGet();
  }

  void sessionClosed(ResponderSession s, boolean admitted) {
    if (admitted) {
      serving.decrementAndGet();
    }
    sessions.remove(s);
    handshaking.remove(s);
  }
}
