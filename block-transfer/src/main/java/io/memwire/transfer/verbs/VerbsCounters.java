package io.memwire.transfer.verbs;

import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The provider's event counters: reads posted, remote access errors and reconnects, peers accepted,
 * connections refused at the limit, how file regions were registered, and the completion totals of
 * queues already closed, so the reported totals never drop. The provider reports them with the
 * gauges of its parts in {@link VerbsProvider#counters()}.
 */
final class VerbsCounters {
  private final LongAdder accessErrors = new LongAdder();
  private final LongAdder reconnects = new LongAdder();
  private final LongAdder postCalls = new LongAdder();
  private final LongAdder postedReads = new LongAdder();
  private final LongAdder acceptedTotal = new LongAdder();
  private final LongAdder connectionsRefused = new LongAdder();
  private final Map<VerbsRegistrar.FilePath, LongAdder> filePaths =
      new EnumMap<>(VerbsRegistrar.FilePath.class);
  private final LongAdder copiedBytes = new LongAdder();

  /** Counters of completion queues already closed. */
  private final LongAdder closedPolled = new LongAdder();

  private final LongAdder closedPollsWithWork = new LongAdder();
  private final LongAdder closedSleeps = new LongAdder();
  private final LongAdder closedEvents = new LongAdder();

  VerbsCounters() {
    for (VerbsRegistrar.FilePath f : VerbsRegistrar.FilePath.values()) {
      filePaths.put(f, new LongAdder());
    }
  }

  /** Counts {@code calls} ibv_post_send calls that posted {@code reads} reads. */
  void posted(int calls, int reads) {
    postCalls.add(calls);
    postedReads.add(reads);
  }

  void accessError() {
    accessErrors.increment();
  }

  void reconnected() {
    reconnects.increment();
  }

  void accepted() {
    acceptedTotal.increment();
  }

  long acceptedTotal() {
    return acceptedTotal.sum();
  }

  void connectionRefused() {
    connectionsRefused.increment();
  }

  long connectionsRefused() {
    return connectionsRefused.sum();
  }

  /** A file region registered by {@code how}; a private copy also counts its bytes. */
  void fileRegistered(VerbsRegistrar.FilePath how, int length) {
    filePaths.get(how).increment();
    if (how == VerbsRegistrar.FilePath.PRIVATE_COPY) {
      copiedBytes.add(length);
    }
  }

  /** Keeps the totals of a completion queue that was just closed. */
  void queueClosed(CompletionThread t) {
    closedPolled.add(t.polled());
    closedPollsWithWork.add(t.pollsWithWork());
    closedSleeps.add(t.sleeps());
    closedEvents.add(t.events());
  }

  /** {@code verbsFileRegions*} and {@code verbsFileCopyBytes}. */
  void putFileRegions(Map<Metric, Long> m) {
    for (VerbsRegistrar.FilePath f : VerbsRegistrar.FilePath.values()) {
      m.put(f.metric, filePaths.get(f).sum());
    }
    m.put(TransportMetrics.VERBS_FILE_COPY_BYTES, copiedBytes.sum());
  }

  /** Remote access errors, reconnects, post calls and posted reads. */
  void putReads(Map<Metric, Long> m) {
    m.put(TransportMetrics.VERBS_REMOTE_ACCESS_ERRORS, accessErrors.sum());
    m.put(TransportMetrics.VERBS_RECONNECTS, reconnects.sum());
    m.put(TransportMetrics.VERBS_POST_CALLS, postCalls.sum());
    m.put(TransportMetrics.VERBS_POSTED_READS, postedReads.sum());
  }

  /** Completion totals of the live and the closed queues, then the queues' own counts. */
  void putCompletions(Map<Metric, Long> m, CompletionQueues<CompletionThread> queues) {
    queues.withQueues(
        live -> {
          long polled = closedPolled.sum();
          long withWork = closedPollsWithWork.sum();
          long sleeps = closedSleeps.sum();
          long events = closedEvents.sum();
          for (CompletionThread t : live) {
            polled += t.polled();
            withWork += t.pollsWithWork();
            sleeps += t.sleeps();
            events += t.events();
          }
          m.put(TransportMetrics.VERBS_COMPLETIONS, polled);
          m.put(TransportMetrics.VERBS_CQ_POLLS_WITH_WORK, withWork);
          m.put(TransportMetrics.VERBS_CQ_SLEEPS, sleeps);
          m.put(TransportMetrics.VERBS_CQ_EVENTS, events);
          return null;
        });
    m.put(TransportMetrics.VERBS_COMPLETION_QUEUES, (long) queues.queues());
    m.put(TransportMetrics.VERBS_COMPLETION_QUEUES_PEAK, (long) queues.peakQueues());
    m.put(TransportMetrics.VERBS_COMPLETION_QUEUES_OPENED, queues.opened());
    m.put(TransportMetrics.VERBS_QUEUE_PAIRS_PER_COMPLETION_QUEUE, (long) queues.perQueue());
  }
}
