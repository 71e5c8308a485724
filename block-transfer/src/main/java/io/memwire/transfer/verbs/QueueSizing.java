package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvContext;
import io.memwire.transfer.TransferConfig;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How deep a client queue pair is, how large a completion queue is, how many queue pairs one holds
 * and how many queues a node opens: all from the device's limits and the settings.
 */
final class QueueSizing {
  // The provider's logger name, so these messages read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  /**
   * Entries of a completion queue unless {@code memwire.verbs.cqEntries} says otherwise (and never
   * more than the device's {@code max_cqe}): 4 MiB of CQEs at most, 4096 queue pairs of depth 16.
   */
  static final int DEFAULT_CQ_ENTRIES = 65536;

  private QueueSizing() {}

  /**
   * Reads one queue pair may have outstanding: the device's {@code max_qp_rd_atom}, also capped by
   * {@code maxOutstandingRequests} and by {@code max_cqe}, so a queue pair's completions always fit
   * its place on a completion queue.
   */
  static int qpDepth(DeviceLimits limits, TransferConfig config) {
    return Math.max(
        1, Math.min(Math.min(limits.maxQpRdAtom, config.maxOutstandingRequests()), limits.maxCqe));
  }

  /**
   * Entries per completion queue: {@code configured} ({@code memwire.verbs.cqEntries}) or {@link
   * #DEFAULT_CQ_ENTRIES}, never more than the device's {@code max_cqe}, never fewer than one queue
   * pair of {@code qpDepth} needs.
   */
  static int cqEntries(Integer configured, int maxCqe, int qpDepth) {
    int want = configured != null ? configured : DEFAULT_CQ_ENTRIES;
    return Math.max(qpDepth, Math.min(want, maxCqe));
  }

  /**
   * Client queue pairs one queue of {@code entries} holds: as many as fit at {@code qpDepth} each,
   * less one whose entries stay spare, so the flushed completions of a queue pair destroyed before
   * they were polled cannot overflow the queue when its place is taken again (at least one).
   */
  static int queuePairsPerQueue(int entries, int qpDepth) {
    int fit = entries / qpDepth;
    return fit > 1 ? fit - 1 : 1;
  }

  /** {@code configured} completion queues, or fewer when the device allows fewer. */
  static int maxQueues(int configured, int deviceMaxCq) {
    return deviceMaxCq == DeviceLimits.UNKNOWN ? configured : Math.min(configured, deviceMaxCq);
  }

  /** Completion vectors of the device, which the queues take in turn (at least one). */
  static int compVectors(IbvContext context) {
    try {
      return Math.max(1, context.getNumCompVectors());
    } catch (IOException | RuntimeException e) {
      LOG.debug("cannot read the number of completion vectors; using vector 0", e);
      return 1;
    }
  }
}
