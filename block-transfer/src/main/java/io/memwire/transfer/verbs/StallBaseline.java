package io.memwire.transfer.verbs;

import io.memwire.transfer.fabric.CounterSample;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;

/**
 * What a stalled read of one {@link VerbsConnection} is explained against: the bound port's
 * counters when the connection opened or, later, when a read last completed (at most {@link
 * #BASELINE_NANOS} old then), and the serving port's active MTU as its handshake told it. {@link
 * #explain} asks the {@link FabricWatch} what the counters did since (an MTU mismatch, UDP 4791
 * unreachable, retransmissions).
 *
 * <p>Threads: any thread; the fields are volatile and each is replaced whole, so a reader sees one
 * sample or the next, never a mix; no lock.
 */
final class StallBaseline {
  /** How old the counters a stalled read is compared with may get while reads complete. */
  private static final long BASELINE_NANOS = TimeUnit.SECONDS.toNanos(5);

  private final FabricWatch fabric;

  /** The counters a stalled read is compared with. */
  private volatile CounterSample baseline;

  private volatile long baselineAt;

  /** The serving port's active MTU as its handshake told it, when it did. */
  private volatile OptionalInt peerMtu;

  /** Samples the counters now, for a connection whose queue pair's handshake told {@code mtu}. */
  StallBaseline(FabricWatch fabric, OptionalInt mtu) {
    this.fabric = fabric;
    this.baseline = fabric.sample();
    this.baselineAt = System.nanoTime();
    this.peerMtu = mtu;
  }

  /** The fabric cause of a stalled read the bound port's counters show since the baseline. */
  String explain() {
    return fabric.explain(baseline, true, peerMtu);
  }

  /** Moves the baseline up after a read completed, at most every {@link #BASELINE_NANOS}. */
  void progressed() {
    long now = System.nanoTime();
    if (now - baselineAt > BASELINE_NANOS) {
      baselineAt = now;
      baseline = fabric.sample();
    }
  }

  /** The MTU a fresh queue pair's handshake told. */
  void peerMtu(OptionalInt mtu) {
    peerMtu = mtu;
  }
}
