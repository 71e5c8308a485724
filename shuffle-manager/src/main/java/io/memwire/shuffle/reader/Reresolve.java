package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.DirectoryPointer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The re-resolve stage (service mode, {@link PointerResolution} on): takes the blocks of one fetch
 * request whose one-sided read or connect failed and re-resolves each of their directory pointers
 * once; returns, per pointer, its blocks moved to the chunk that replaced it, or why they could not
 * be. It reads nothing and ends no block: {@link FetchRun}, the one place that re-resolves, reads
 * moved blocks again (with no second chance) and sends the others to Spark's path. A moved block's
 * slot is checked against its map id as any read's is, so an output that was not taken back is
 * never read in its place.
 *
 * <p>Threads: {@link #reresolve} runs where the read failed (an I/O thread, the task thread); a
 * resolution's request runs on {@code memwire-shuffle-fallback-N} and its outcome completes there
 * (or at once, when the pointer was resolved before).
 */
final class Reresolve {
  private final PointerResolution resolution;
  private final int shuffleId;
  private final Executor threads;
  private final ReadMetrics metrics;

  /**
   * @param threads where a resolution's request runs (it blocks)
   */
  Reresolve(PointerResolution resolution, int shuffleId, Executor threads, ReadMetrics metrics) {
    this.resolution = resolution;
    this.shuffleId = shuffleId;
    this.threads = threads;
    this.metrics = metrics;
  }

  /**
   * What re-resolving one pointer gave for its {@code blocks}: the same blocks routed to the chunk
   * that replaced it ({@code moved}), or null and {@code why} not.
   */
  record Outcome(List<Wanted> blocks, List<Wanted> moved, String why) {}

  /** One outcome per directory pointer of {@code blocks}, in the order they first appear. */
  List<CompletableFuture<Outcome>> reresolve(List<Wanted> blocks) {
    Map<DirectoryPointer, List<Wanted>> byPointer = new LinkedHashMap<>();
    blocks.forEach(
        w -> byPointer.computeIfAbsent(w.route().pointer(), k -> new ArrayList<>()).add(w));
    List<CompletableFuture<Outcome>> outcomes = new ArrayList<>(byPointer.size());
    byPointer.forEach(
        (old, ws) -> {
          boolean[] fresh = {false};
          outcomes.add(
              resolution
                  .resolve(shuffleId, old, threads, fresh)
                  .handle(
                      (now, err) -> {
                        if (fresh[0]) {
                          metrics.reresolved(err == null);
                        }
                        if (err != null) {
                          return new Outcome(
                              ws,
                              null,
                              "its pointer was not re-resolved: " + Failures.rootMessage(err));
                        }
                        if (now.equals(old)) {
                          return new Outcome(ws, null, "its pointer resolved to itself");
                        }
                        List<Wanted> moved = new ArrayList<>(ws.size());
                        ws.forEach(w -> moved.add(w.movedTo(now)));
                        return new Outcome(ws, moved, null);
                      }));
        });
    return outcomes;
  }
}
