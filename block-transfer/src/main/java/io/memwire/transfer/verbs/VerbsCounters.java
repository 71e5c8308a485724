package io.memwire.transfer.verbs;

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
  void putFileRegions(Map<String, Long> m) {
    for (VerbsRegistrar.FilePath f : VerbsRegistrar.FilePath.values()) {
      m.put(f.counter, filePaths.get(f).sum());
    }
    m.put("verbsFileCopyBytes", copiedBytes.sum());
  }

  /** Remote access errors, reconnects, post calls and posted reads. */
  void putReads(Map<String, Long> m) {
    m.put("verbsRemoteAccessErrors", accessErrors.sum());
    m.put("verbsReconnects", reconnects.sum());
    m.put("verbsPostCalls", postCalls.sum());
    m.put("verbsPostedReads", postedReads.sum());
  }

  /** Completion totals of the live and the closed queues, then the queues' own counts. */
  void putCompletions(Map<String, Long> m, CompletionQueues<CompletionThread> queues) {
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
          m.put("verbsCompletions", polled);
          m.put("verbsCqPollsWithWork", withWork);
          m.put("verbsCqSleeps", sleeps);
          m.put("verbsCqEvents", events);
          return null;
        });
    m.put("verbsCompletionQueues", (long) queues.queues());
    m.put("verbsCompletionQueuesPeak", (long) queues.peakQueues());
    m.put("verbsCompletionQueuesOpened", queues.opened());
    m.put("verbsQueuePairsPerCompletionQueue", (long) queues.perQueue());
  }
}
