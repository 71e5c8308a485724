package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;

/**
 * Carries out one fetch request's {@link FetchPlan}: its Spark-bound blocks go to Spark's path, its
 * one-sided blocks to a {@link FetchRequest} (the stages). It is the one place that decides what
 * becomes of blocks leaving the one-sided path ({@link #leave}): with a second chance (service
 * mode) blocks whose read or connect failed are re-resolved, at the one re-resolve point ({@link
 * #reresolve}), and read again from the chunk that replaced theirs, with no second chance of their
 * own; every other block, and those whose pointer does not resolve, go to {@link SparkFallback}
 * (its one caller, {@link #toSpark}), which fails them instead when fallback is off.
 *
 * <p>Threads: built on the task thread when Spark issues the request; {@link #start} runs on the
 * task thread (at once, or when its held step ends); leaving blocks are decided on the thread that
 * ended them; a re-resolved read starts on {@code memwire-shuffle-fallback-N}.
 */
final class FetchRun {
  private final ReadServices services;
  private final int shuffleId;
  private final BlockStoreClient spark;
  private final FetchPlan plan;
  private final BlockFetchingListener listener;

  /** Non-null when Spark wants the blocks on disk ({@link FetchPlan.Mode#DISK}). */
  private final DownloadFileManager toDisk;

  /** Null without a second chance. */
  private final Reresolve reresolve;

  /** How the one-sided blocks' first read ends; null when there are none. */
  private final BlockEnds first;

  /**
   * @param spark Spark's own client ({@code blockManager.blockStoreClient})
   * @param toDisk Spark's download-file manager when the plan's mode is {@code DISK}, else null
   */
  FetchRun(
      ReadServices services,
      int shuffleId,
      BlockStoreClient spark,
      FetchPlan plan,
      BlockFetchingListener listener,
      DownloadFileManager toDisk) {
    this.services = services;
    this.shuffleId = shuffleId;
    this.spark = spark;
    this.plan = plan;
    this.listener = listener;
    this.toDisk = toDisk;
    this.reresolve =
        plan.secondChance()
            ? new Reresolve(services.resolution(), shuffleId, services.threads, services.metrics)
            : null;
    // Made as Spark issues the request: the time to its first block counts from here.
    this.first = plan.oneSided().isEmpty() ? null : ends(plan.secondChance());
  }

  /** Sends the Spark-bound blocks to Spark's path, then starts the one-sided reads. */
  void start() {
    FetchPlan.ToSpark s = plan.toSpark();
    if (s != null) {
      toSpark(s.ids(), s.cause(), s.reason(), s.log());
    }
    if (first != null) {
      read(plan.oneSided(), first);
    }
  }

  private void read(List<MapBlocks> maps, BlockEnds ends) {
    new FetchRequest(services, shuffleId, plan.peer(), maps, ends, toDisk).start();
  }

  private BlockEnds ends(boolean secondChance) {
    return new BlockEnds(
        listener,
        toDisk != null,
        services.metrics,
        (blocks, cause, reason) -> leave(blocks, cause, reason, secondChance));
  }

  /**
   * The one decision for blocks that leave the one-sided path: re-resolved when they have a second
   * chance and their read or connect failed, else to Spark's path.
   */
  void leave(List<Wanted> blocks, FallbackCause cause, String reason, boolean secondChance) {
    if (secondChance && (cause == FallbackCause.READ || cause == FallbackCause.CONNECT)) {
      reresolve(blocks, cause, reason);
    } else {
      toSpark(ids(blocks), cause, reason, true);
    }
  }

  /** The one re-resolve point: moved blocks are read again, the others go to Spark's path. */
  private void reresolve(List<Wanted> blocks, FallbackCause cause, String reason) {
    for (CompletableFuture<Reresolve.Outcome> outcome : reresolve.reresolve(blocks)) {
      var unused =
          outcome.thenAcceptAsync(
              o -> {
                if (o.moved() == null) {
                  toSpark(ids(o.blocks()), cause, reason + "; " + o.why(), true);
                } else {
                  read(MapBlocks.byRoute(o.moved()), ends(false));
                }
              },
              services.threads);
    }
  }

  /** The one call of Spark's path. */
  private void toSpark(List<String> ids, FallbackCause cause, String reason, boolean log) {
    services.fallback.handOver(spark, plan.peer(), ids, listener, toDisk, cause, reason, log);
  }

  private static List<String> ids(List<Wanted> blocks) {
    List<String> ids = new ArrayList<>(blocks.size());
    blocks.forEach(w -> ids.add(w.id()));
    return ids;
  }
}
