package io.memwire.shuffle;

import java.util.function.Supplier;

/**
 * Where an {@link RdmaShuffleManager} is: STARTING, then STARTED or DELEGATING, and from any phase
 * STOPPED, which is final. Moves only under this object's monitor; read without it.
 */
final class ManagerLifecycle {

  /** The phases. */
  enum Phase {
    /** The transport starts at first use (built before SparkEnv, or the local-mode driver). */
    STARTING,
    /** The transport runs: map outputs are registered and read one-sided. */
    STARTED,
    /** No transport in this JVM: Spark's sort shuffle does everything (the reason says why). */
    DELEGATING,
    /** The manager stopped. */
    STOPPED
  }

  /**
   * A phase, the transport (running when STARTED, closed when STOPPED after a start: its counters
   * stay readable) and why no transport runs (for {@link #why()}).
   */
  private record State(Phase phase, ManagerTransport transport, String why) {
    /** The transport if it runs, else null. */
    ManagerTransport running() {
      return phase == Phase.STARTED ? transport : null;
    }
  }

  private volatile State state;

  private ManagerLifecycle(State state) {
    this.state = state;
  }

  /** No transport will start in this JVM, for the reason given. */
  static ManagerLifecycle delegating(String why) {
    return new ManagerLifecycle(new State(Phase.DELEGATING, null, why));
  }

  /** The transport starts at first use; {@code why} is the description until then. */
  static ManagerLifecycle starting(String why) {
    return new ManagerLifecycle(new State(Phase.STARTING, null, why));
  }

  /**
   * Starts the transport once with {@code start} (null: it could not start, delegate to Spark);
   * returns the running transport, or null when none runs.
   */
  ManagerTransport ensureStarted(Supplier<ManagerTransport> start) {
    State s = state;
    if (s.phase() != Phase.STARTING) {
      return s.running();
    }
    synchronized (this) {
      if (state.phase() == Phase.STARTING) {
        // A start that throws (verbs asked for, or fallback=false) leaves STARTING: the next use
        // tries again and fails the same way, as Spark retries the task.
        ManagerTransport t = start.get();
        state =
            t != null
                ? new State(Phase.STARTED, t, null)
                : new State(Phase.DELEGATING, null, "none (Spark's own transfer only)");
      }
      return state.running();
    }
  }

  /**
   * Moves to STOPPED, keeping the transport that ran for {@link #started()}; returns false when the
   * manager had stopped already.
   */
  synchronized boolean stop() {
    State s = state;
    if (s.phase() == Phase.STOPPED) {
      return false;
    }
    state = new State(Phase.STOPPED, s.running(), "none (stopped)");
    return true;
  }

  /** The running transport, or null. */
  ManagerTransport running() {
    return state.running();
  }

  /** The transport that started, also once stopped (closed then), or null. */
  ManagerTransport started() {
    return state.transport();
  }

  /** "provider: reason" of the running transport, or why none runs. */
  String describe() {
    State s = state;
    ManagerTransport t = s.running();
    return t == null ? s.why() : t.describe();
  }
}
