package io.memwire.transfer;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.TransportProvider;
import java.net.InetSocketAddress;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's outgoing connections: creates them through the provider, caches one per peer, backs off
 * from peers that could not be reached, and runs the timer thread that fails overdue reads and
 * closes idle connections. {@link Connection} only talks to its peer; this class decides which
 * connection a caller gets.
 *
 * <p>Connecting to one peer is serialized by a per-peer lock that exists only while an attempt for
 * that peer is running or waiting: the last attempt to leave removes it, so a node that talked to
 * many peers over its life keeps no state for the ones it no longer talks to.
 */
final class ConnectionPool {
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionPool.class);
  private static final AtomicInteger TIMER_IDS = new AtomicInteger();

  private final TransferNode node;
  private final TransportProvider provider;
  private final TransferConfig config;
  private final Counters counters;
  private final Map<InetSocketAddress, Connection> connections = new ConcurrentHashMap<>();

  /** Peers with a connect attempt running or waiting; an entry lives as long as its attempts. */
  private final Map<InetSocketAddress, ConnectLock> connectLocks = new ConcurrentHashMap<>();

  private final Map<InetSocketAddress, PeerDown> downPeers = new ConcurrentHashMap<>();
  private final ScheduledExecutorService timer;
  private final NanoClock clock;
  private final long idleTimeoutNanos;
  private final SweepListener sweeps;
  private final AtomicBoolean reapLogged = new AtomicBoolean();
  private final AtomicBoolean reapedReadLogged = new AtomicBoolean();
  private volatile boolean closed;

  /**
   * Told of each finished sweep of the idle reaper, on the timer thread, with when it began on the
   * pool's clock: every connection idle by then has been closed. {@link #NONE} in production; a
   * test passes its own to wait for a sweep.
   */
  @FunctionalInterface
  interface SweepListener {
    SweepListener NONE = startNanos -> {};

    void swept(long startNanos);
  }

  /**
   * A pool on {@code clock} (the node's: its connections stamp reads and ends on it too) whose
   * sweeps run on {@code timer} ({@link #newTimer}, or a test's that runs them when told), telling
   * {@code sweeps} of each finished idle sweep.
   */
  ConnectionPool(
      TransferNode node,
      TransportProvider provider,
      TransferConfig config,
      Counters counters,
      NanoClock clock,
      ScheduledExecutorService timer,
      SweepListener sweeps) {
    this.node = node;
    this.provider = provider;
    this.config = config;
    this.counters = counters;
    this.clock = clock;
    this.timer = timer;
    this.sweeps = sweeps;
    long tick = Math.max(10, Math.min(1000, config.readTimeout().toMillis() / 4));
    var unusedTimeouts =
        timer.scheduleWithFixedDelay(
            guarded("timeout", this::checkTimeouts), tick, tick, TimeUnit.MILLISECONDS);
    this.idleTimeoutNanos = config.connectionIdleTimeout().toNanos();
    if (idleTimeoutNanos > 0) {
      // The same thread: both sweeps are short and never wait on a peer (an idle close has
      // nothing to quiesce).
      long sweep = Math.max(10, Math.min(1000, config.connectionIdleTimeout().toMillis() / 4));
      var unusedReaper =
          timer.scheduleWithFixedDelay(
              guarded("idle", this::reapIdle), sweep, sweep, TimeUnit.MILLISECONDS);
    }
  }

  /** The timer thread of a node's pool. */
  static ScheduledExecutorService newTimer() {
    return Executors.newSingleThreadScheduledExecutor(
        r -> {
          Thread t = new Thread(r, "memwire-read-timeouts-" + TIMER_IDS.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
  }

  /**
   * A periodic sweep that survives its own failure: an exception escaping a task scheduled with a
   * fixed delay would end its repetition silently (the returned future, which nobody reads, would
   * hold it).
   */
  private static Runnable guarded(String what, Runnable body) {
    return () -> {
      try {
        body.run();
      } catch (RuntimeException e) {
        LOG.warn("{} sweep failed; it runs again at the next tick", what, e);
      }
    };
  }

  /** See {@link TransferNode#connection}. */
  Connection get(InetSocketAddress peer) throws TransferException {
    Connection c = connections.get(peer);
    // A claim marks it used now: the reaper leaves it alone for connectionIdleTimeout.
    if (c != null && c.claim(clock.nanoTime())) {
      return c;
    }
    checkBackoff(peer);
    ConnectLock lock = enter(peer);
    try {
      synchronized (lock) {
        return connectHoldingLock(peer);
      }
    } finally {
      leave(peer);
    }
  }

  /** Takes a share of {@code peer}'s connect lock, creating it for the first attempt. */
  private ConnectLock enter(InetSocketAddress peer) {
    return connectLocks.compute(
        peer,
        (p, l) -> {
          ConnectLock lock = l != null ? l : new ConnectLock();
          lock.attempts++;
          return lock;
        });
  }

  /** Gives the share back; the last attempt removes the lock. */
  private void leave(InetSocketAddress peer) {
    connectLocks.computeIfPresent(peer, (p, l) -> --l.attempts == 0 ? null : l);
  }

  private Connection connectHoldingLock(InetSocketAddress peer) throws TransferException {
    Connection c = connections.get(peer);
    if (c != null && c.claim(clock.nanoTime())) {
      return c;
    }
    if (c != null) {
      c.close();
    }
    // Callers that waited for the lock while an attempt failed fail at once too.
    checkBackoff(peer);
    ProviderConnection pc;
    try {
      pc = provider.connect(peer);
    } catch (TransferException e) {
      counters.connectFailures.increment();
      if (!config.peerBackoff().isZero()) {
        PeerDown before = downPeers.get(peer);
        int failures = before == null ? 1 : before.failuresInARow + 1;
        long backoff = backoffNanos(config.peerBackoff().toNanos(), failures);
        downPeers.put(peer, new PeerDown(clock.nanoTime() + backoff, backoff, failures, e));
        LOG.info(
            "cannot connect to {} ({}); further attempts fail at once for {} ms ({} failed in a"
                + " row)",
            peer,
            e.getMessage(),
            TimeUnit.NANOSECONDS.toMillis(backoff),
            failures);
      }
      throw e;
    }
    downPeers.remove(peer);
    c = new Connection(node, pc, config, provider.maxReadsInFlightPerConnection(), clock);
    connections.put(peer, c);
    if (closed) {
      c.close();
      throw new TransferConnectionException("transfer node closed", peer, null);
    }
    LOG.debug("connected to {} over {}", peer, provider.kind());
    return c;
  }

  private void checkBackoff(InetSocketAddress peer) throws TransferConnectionException {
    PeerDown down = downPeers.get(peer);
    if (down == null) {
      return;
    }
    long left = down.untilNanos - clock.nanoTime();
    if (left <= 0) {
      return; // kept: a failure of this attempt doubles the back-off
    }
    counters.peerBackoffRejects.increment();
    throw new TransferConnectionException(
        "not connecting: the last attempt failed ("
            + down.cause.getMessage()
            + "); next attempt allowed in "
            + TimeUnit.NANOSECONDS.toMillis(left)
            + " ms",
        peer,
        down.cause);
  }

  /** A peer's connect lock and how many attempts share it; counted inside the map's compute. */
  private static final class ConnectLock {
    int attempts;
  }

  /**
   * The back-off after {@code failures} failed attempts in a row: {@code base}, doubled with each
   * further failure (a firewall or a refusing peer stays so, and each attempt may cost a whole
   * connectTimeout), up to {@link #MAX_BACKOFF_NANOS} or {@code base} if that is larger.
   */
  static long backoffNanos(long base, int failures) {
    long cap = Math.max(base, MAX_BACKOFF_NANOS);
    int doublings = Math.min(failures - 1, 40);
    return base > (cap >> doublings) ? cap : Math.min(cap, base << doublings);
  }

  private static final long MAX_BACKOFF_NANOS = TimeUnit.MINUTES.toNanos(5);

  /**
   * A peer attempts to connect to failed: until when attempts fail at once, that back-off, how many
   * attempts failed in a row, and the last failure.
   */
  private record PeerDown(
      long untilNanos, long backoffNanos, int failuresInARow, TransferException cause) {}

  /** See {@link TransferNode#disconnect}. */
  void disconnect(InetSocketAddress peer) {
    Connection c = connections.remove(peer);
    if (c != null) {
      c.close();
    }
  }

  /**
   * The idle reaper, on the timer thread: closes every cached connection that {@linkplain
   * Connection#retireIfIdle retires} as idle and drops failed ones whose reads have all ended from
   * the cache.
   */
  private void reapIdle() {
    long now = clock.nanoTime();
    int reaped = 0;
    for (Map.Entry<InetSocketAddress, Connection> e : connections.entrySet()) {
      Connection c = e.getValue();
      try {
        if (c.retireIfIdle(now, idleTimeoutNanos)) {
          connections.remove(e.getKey(), c);
          c.close(); // nothing is outstanding: no read sees this close
          counters.connectionsReaped.increment();
          reaped++;
          if (reapLogged.compareAndSet(false, true)) {
            LOG.info(
                "closed the idle connection from {} to {}: no reads for {} ms ({}); later idle "
                    + "closes are logged at DEBUG and counted as connectionsReaped",
                provider.localAddress(),
                e.getKey(),
                config.connectionIdleTimeout().toMillis(),
                TransferConfig.CONNECTION_IDLE_TIMEOUT);
          } else {
            LOG.debug("closed the idle connection to {}", e.getKey());
          }
        } else if (c.isDone()) {
          connections.remove(e.getKey(), c); // failed earlier; keeps the cache to live peers
        }
      } catch (RuntimeException ex) {
        LOG.warn("idle check failed for {}", e.getKey(), ex);
      }
    }
    if (reaped > 0) {
      LOG.debug("{} idle connections closed; {} cached", reaped, connections.size());
    }
    sweeps.swept(now);
  }

  /** Called by a connection when a read arrived after the reaper retired it. */
  void readOnReapedConnection(Connection c) {
    if (reapedReadLogged.compareAndSet(false, true)) {
      LOG.info(
          "a read on the connection to {} arrived after it was closed as idle; it failed unsent "
              + "with ConnectionReapedException. Callers should take connections from "
              + "connection(peer) per batch instead of keeping them (logged once)",
          c.peer());
    }
  }

  /**
   * Peers this pool keeps any state for: a cached connection, a connect lock or a back-off ({@code
   * trackedPeers} in the node's stats).
   */
  int peersTracked() {
    Set<InetSocketAddress> peers = new HashSet<>(connections.keySet());
    peers.addAll(connectLocks.keySet());
    peers.addAll(downPeers.keySet());
    return peers.size();
  }

  /** The timer's other sweep: fails overdue reads and forgets back-offs long run out. */
  private void checkTimeouts() {
    long now = clock.nanoTime();
    for (Connection c : connections.values()) {
      try {
        c.checkTimeout(now);
      } catch (RuntimeException e) {
        LOG.warn("timeout check failed for {}", c.peer(), e);
      }
    }
    // A peer not tried again within its last back-off after it ran out starts afresh.
    downPeers.values().removeIf(d -> d.untilNanos + d.backoffNanos - now <= 0);
  }

  /** Connections in the cache that are open. */
  long openConnections() {
    return connections.values().stream().filter(Connection::isOpen).count();
  }

  /** Stops the timer and closes every connection; outstanding reads fail. */
  void close() {
    closed = true;
    timer.shutdownNow();
    for (Connection c : connections.values()) {
      c.close();
    }
    connections.clear();
  }

  /** Waits (bounded) for the timer thread to end after {@link #close}. */
  void awaitTimer() {
    try {
      if (!timer.awaitTermination(5, TimeUnit.SECONDS)) {
        LOG.debug("timer thread still running 5 s after close");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
