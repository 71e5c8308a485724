package io.memwire.flight;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The batches one exchange keeps leased, against the client's credit window. A lease counts from
 * the BATCH that describes it until its body is released (after the FREE, or however else it
 * ended), so the window bounds what is pinned. Not thread-safe: every call is made holding the
 * session's monitor (given at construction, checked by assertions).
 */
final class LeaseWindow {
  /** A leased batch: its body and guard, until the lease ends. */
  static final class Lease {
    final long seq;
    final long bytes;
    final long sentNanos = System.nanoTime();
    final LeaseGuards.Guard guard;
    final LeaseBodies.Body body;

    Lease(long seq, long bytes, LeaseGuards.Guard guard, LeaseBodies.Body body) {
      this.seq = seq;
      this.bytes = bytes;
      this.guard = guard;
      this.body = body;
    }
  }

  private final Object monitor;
  private final int windowBatches;
  private final long windowBytes;
  private final Map<Long, Lease> leases = new LinkedHashMap<>();
  private long leasedBytes;

  /** Leases taken out of {@link #leases} whose guard and body are being released right now. */
  private int endingLeases;

  private long endingBytes;
  private long nextSeq;

  /** The client half-closed its side: no FREE will come any more. */
  private boolean clientHalfClosed;

  LeaseWindow(Object monitor, int windowBatches, long windowBytes) {
    this.monitor = monitor;
    this.windowBatches = windowBatches;
    this.windowBytes = windowBytes;
  }

  /** Credit for one more batch of {@code bytes}; an empty window always admits one batch. */
  boolean hasCredit(long bytes) {
    assert Thread.holdsLock(monitor);
    int batches = leases.size() + endingLeases;
    return batches == 0
        || (batches < windowBatches && leasedBytes + endingBytes + bytes <= windowBytes);
  }

  /** The sequence number the next lease (or a metadata message before it) gets. */
  long nextSeq() {
    assert Thread.holdsLock(monitor);
    return nextSeq;
  }

  /** Adds a lease with the next sequence number. */
  Lease add(long bytes, LeaseGuards.Guard guard, LeaseBodies.Body body) {
    assert Thread.holdsLock(monitor);
    Lease l = new Lease(nextSeq++, bytes, guard, body);
    leases.put(l.seq, l);
    leasedBytes += bytes;
    return l;
  }

  /** Takes the lease out (it now counts as ending); null when it is not leased (any more). */
  Lease remove(long seq) {
    assert Thread.holdsLock(monitor);
    Lease l = leases.remove(seq);
    if (l != null) {
      leasedBytes -= l.bytes;
      endingLeases++;
      endingBytes += l.bytes;
    }
    return l;
  }

  /** Takes every lease out (each now counts as ending). */
  List<Lease> removeAll() {
    assert Thread.holdsLock(monitor);
    List<Lease> all = new ArrayList<>(leases.values());
    leases.clear();
    leasedBytes = 0;
    endingLeases += all.size();
    for (Lease l : all) {
      endingBytes += l.bytes;
    }
    return all;
  }

  /** A lease taken out has released its body: its credit comes back. */
  void released(Lease l) {
    assert Thread.holdsLock(monitor);
    endingLeases--;
    endingBytes -= l.bytes;
  }

  /** The oldest lease still leased, or null. */
  Lease oldest() {
    assert Thread.holdsLock(monitor);
    Iterator<Lease> it = leases.values().iterator();
    return it.hasNext() ? it.next() : null;
  }

  /** The client half-closed: it frees nothing more, so no lease waits for a FREE. */
  void clientHalfClosed() {
    assert Thread.holdsLock(monitor);
    clientHalfClosed = true;
  }

  boolean isClientHalfClosed() {
    assert Thread.holdsLock(monitor);
    return clientHalfClosed;
  }

  /** Some lease is still leased and the client may still free it. */
  boolean awaitsFrees() {
    assert Thread.holdsLock(monitor);
    return !leases.isEmpty() && !clientHalfClosed;
  }

  /** No lease is leased (some may still be ending). */
  boolean isEmpty() {
    assert Thread.holdsLock(monitor);
    return leases.isEmpty();
  }

  /** No lease is leased or ending. */
  boolean isIdle() {
    assert Thread.holdsLock(monitor);
    return leases.isEmpty() && endingLeases == 0;
  }

  int leasedBatches() {
    assert Thread.holdsLock(monitor);
    return leases.size();
  }

  long leasedBytes() {
    assert Thread.holdsLock(monitor);
    return leasedBytes;
  }
}
