package io.memwire.flight;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state of one server exchange ({@link ServerSession}) and the only place it changes: its
 * {@link SessionState}, the client's credit window with the leased batches ({@link LeaseWindow})
 * and the producer's outcome, all under this object's monitor, and every wait on them. It knows no
 * producer, gRPC stream, handler or transport, so nothing is called out while the monitor is held;
 * the session acts on what these methods return, after they return.
 *
 * <p>Each move of the state, each lease taken out or released and the client's half-close notify
 * every waiter; the waits with a deadline are bounded by the lease timeout.
 */
final class SessionMonitor {
  private static final Logger LOG = LoggerFactory.getLogger(SessionMonitor.class);

  /** What the producer left once it stopped streaming. */
  record ProducerOutcome(Throwable error) {}

  /** How a wait for the client's credit ended. */
  enum Credit {
    GRANTED,
    SESSION_ENDED,
    TIMED_OUT
  }

  private final String peer;
  private final ServerStats stats;

  /** The leased batches and the client's credit; every call under this object's monitor. */
  private final LeaseWindow window;

  /** Written only by {@link #moveTo} under this object's monitor; read anywhere. */
  private volatile SessionState state = SessionState.STREAMING;

  /** Why the producer failed, set with the move to DRAINING; null if it did not. */
  @GuardedBy("this")
  private Throwable producerError;

  /**
   * @param peer the client, for the log
   * @param windowBatches the credit window in batches (client's and server's smaller)
   * @param windowBytes the credit window in bytes
   */
  SessionMonitor(String peer, ServerStats stats, int windowBatches, long windowBytes) {
    this.peer = peer;
    this.stats = stats;
    this.window = new LeaseWindow(this, windowBatches, windowBytes);
  }

  /**
   * Moves to {@code to}; the caller holds the monitor and has checked the state is not terminal.
   */
  private void moveTo(SessionState to) {
    assert Thread.holdsLock(this);
    SessionState from = state;
    state = from.moveTo(to);
    LOG.debug("RDMA exchange with {}: {} -> {}", peer, from, to);
    notifyAll();
  }

  /** Whether the exchange has ended (completed, failed, timed out or cancelled). */
  boolean isEnded() {
    return state.isTerminal();
  }

  /** Moves to ENDED unless the session already ended; true when it moved. */
  synchronized boolean moveToEnded() {
    if (state.isTerminal()) {
      return false;
    }
    moveTo(SessionState.ENDED);
    return true;
  }

  /** Moves to CANCELLED unless the session already ended; true when it moved. */
  synchronized boolean moveToCancelled() {
    if (state.isTerminal()) {
      return false;
    }
    moveTo(SessionState.CANCELLED);
    return true;
  }

  // ---- the producer -----------------------------------------------------------------------

  /** The producer failed: the exchange ends with {@code ex} once the sent batches are read. */
  synchronized void producerFailed(Throwable ex) {
    if (producerError == null) {
      producerError = ex;
    }
    if (state == SessionState.STREAMING) {
      moveTo(SessionState.DRAINING);
    }
  }

  /**
   * The producer completed. With {@code holdUntilIdle} (a zero-copy producer, whose buffers are
   * leased in place) this waits until no lease is leased or ending, at most the lease timeout.
   */
  synchronized void producerCompleted(boolean holdUntilIdle, long timeoutNanos)
      throws InterruptedException {
    if (state == SessionState.STREAMING) {
      moveTo(SessionState.DRAINING);
    }
    if (holdUntilIdle) {
      awaitWhile(() -> !window.isIdle(), System.nanoTime() + timeoutNanos);
    }
  }

  /**
   * Waits while the producer streams (an asynchronous producer finishes later); its outcome, or
   * null when the session ended meanwhile.
   */
  synchronized ProducerOutcome awaitProducer() throws InterruptedException {
    while (state == SessionState.STREAMING) {
      wait();
    }
    return state.isTerminal() ? null : new ProducerOutcome(producerError);
  }

  /**
   * Waits until the client has freed every leased batch or half-closed; false when the session
   * ended meanwhile. Unbounded here: the lease timer ends a session with an overdue lease.
   */
  synchronized boolean awaitDrained() throws InterruptedException {
    while (window.awaitsFrees() && state == SessionState.DRAINING) {
      wait();
    }
    return !state.isTerminal();
  }

  // ---- credit and leases ------------------------------------------------------------------

  /** Whether the window admits one more batch. */
  synchronized boolean hasCredit() {
    return window.hasCredit(0);
  }

  /** Waits, at most the lease timeout, until the window has room for {@code bytes}. */
  synchronized Credit awaitCredit(long bytes, long timeoutNanos) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutNanos;
    if (!state.isTerminal() && !window.hasCredit(bytes)) {
      stats.creditWaits.increment();
      awaitWhile(() -> !window.hasCredit(bytes), deadline);
    }
    if (state.isTerminal()) {
      return Credit.SESSION_ENDED;
    }
    return window.hasCredit(bytes) ? Credit.GRANTED : Credit.TIMED_OUT;
  }

  /**
   * Waits on this monitor while {@code blocked} holds and the session has not ended, at most until
   * {@code deadline} ({@link System#nanoTime}).
   */
  private void awaitWhile(BooleanSupplier blocked, long deadline) throws InterruptedException {
    assert Thread.holdsLock(this);
    long left;
    while (!state.isTerminal()
        && blocked.getAsBoolean()
        && (left = deadline - System.nanoTime()) > 0) {
      wait(Math.max(1, left / 1_000_000));
    }
  }

  /**
   * Adds a prepared lease to the window: its sequence number, or -1 when the session ended while it
   * was prepared (then the caller releases it).
   */
  synchronized long addLease(long bytes, LeaseGuards.Guard guard, LeaseBodies.Body body) {
    if (state.isTerminal()) {
      return -1;
    }
    long seq = window.add(bytes, guard, body).seq;
    stats.notePeak(window.leasedBytes());
    return seq;
  }

  /** The sequence number of the next message. */
  synchronized long nextSeq() {
    return window.nextSeq();
  }

  /** The client freed {@code seq}: the lease to end, or null when it already ended. */
  synchronized LeaseWindow.Lease freed(long seq) {
    LeaseWindow.Lease l = window.remove(seq);
    notifyAll(); // the drain may wait for the last lease to be freed
    return l;
  }

  /** Takes every lease out of the window, to end them. */
  synchronized List<LeaseWindow.Lease> removeAll() {
    List<LeaseWindow.Lease> all = window.removeAll();
    notifyAll();
    return all;
  }

  /** A lease taken out has released its body: true when the window admits a batch again. */
  synchronized boolean released(LeaseWindow.Lease l) {
    window.released(l);
    notifyAll();
    return window.hasCredit(0);
  }

  /** The client half-closed: it frees nothing more. */
  synchronized void clientHalfClosed() {
    window.clientHalfClosed();
    notifyAll();
  }

  synchronized boolean isClientHalfClosed() {
    return window.isClientHalfClosed();
  }

  /** The oldest lease if it was sent more than {@code timeoutNanos} before {@code nowNanos}. */
  synchronized LeaseWindow.Lease overdue(long nowNanos, long timeoutNanos) {
    LeaseWindow.Lease l = window.oldest();
    return l == null || nowNanos - l.sentNanos <= timeoutNanos ? null : l;
  }

  synchronized int leasedBatches() {
    return window.leasedBatches();
  }

  synchronized long leasedBytes() {
    return window.leasedBytes();
  }
}
