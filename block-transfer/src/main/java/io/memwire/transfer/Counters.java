package io.memwire.transfer;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** The node's live counters; {@link TransferStats} is their snapshot. */
final class Counters {
  final LongAdder readsCompleted = new LongAdder();
  final LongAdder bytesRead = new LongAdder();
  final LongAdder remoteAccessErrors = new LongAdder();
  final LongAdder connectionErrors = new LongAdder();
  final LongAdder timeouts = new LongAdder();

  /** Connection attempts refused at once because the peer is backed off. */
  final LongAdder peerBackoffRejects = new LongAdder();

  /** Outgoing connections closed by the idle reaper. */
  final LongAdder connectionsReaped = new LongAdder();

  /** Connections that could not be opened. */
  final LongAdder connectFailures = new LongAdder();

  final AtomicLong outstandingRequests = new AtomicLong();
  final AtomicLong registeredRegions = new AtomicLong();
  final AtomicLong mappedSegments = new AtomicLong();
  final AtomicLong mappedBytes = new AtomicLong();

  void requestsStarted(int n) {
    outstandingRequests.addAndGet(n);
  }

  void requestCompleted(int bytes) {
    outstandingRequests.decrementAndGet();
    readsCompleted.increment();
    bytesRead.add(bytes);
  }

  void requestFailed(TransferException e) {
    outstandingRequests.decrementAndGet();
    if (e instanceof RemoteAccessException) {
      remoteAccessErrors.increment();
    } else if (e instanceof TransferTimeoutException) {
      timeouts.increment();
    } else {
      connectionErrors.increment();
    }
  }
}
