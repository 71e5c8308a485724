package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectoryPointer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.DownloadFileManager;

/**
 * The second chance of one fetch request's blocks whose one-sided read or connect failed (service
 * mode, {@link PointerResolution} on): each directory pointer is re-resolved once, and its blocks
 * are read again, one-sided, by a new {@link FetchRequest} from the chunk that replaced it, with no
 * second chance of their own. A pointer the service does not resolve sends its blocks to {@link
 * SparkFallback} as before (a fetch failure with fallback off). The new request checks the slot's
 * map id as any request does, so an output that was not taken back is never read in its place.
 *
 * <p>Threads: {@link #retry} runs where the read failed (an I/O thread, the task thread); the
 * request and the new fetch run on {@code memwire-shuffle-fallback-N}.
 */
final class Reresolve implements BlockEnds.Retry {
  private final ReadContext ctx;
  private final int shuffleId;
  private final Peer peer;
  private final BlockFetchingListener listener;
  private final DownloadFileManager toDisk;
  private final SparkFallback fallback;

  Reresolve(
      ReadContext ctx,
      int shuffleId,
      Peer peer,
      BlockFetchingListener listener,
      DownloadFileManager toDisk,
      SparkFallback fallback) {
    this.ctx = ctx;
    this.shuffleId = shuffleId;
    this.peer = peer;
    this.listener = listener;
    this.toDisk = toDisk;
    this.fallback = fallback;
  }

  @Override
  public void retry(List<Wanted> blocks, FallbackCause cause, String reason) {
    Map<DirectoryPointer, List<Wanted>> byPointer = new LinkedHashMap<>();
    blocks.forEach(
        w -> byPointer.computeIfAbsent(w.route().pointer(), k -> new ArrayList<>()).add(w));
    byPointer.forEach(
        (old, ws) -> {
          boolean[] fresh = {false};
          var unused =
              ctx.resolution()
                  .resolve(shuffleId, old, ctx.fallbackThreads, fresh)
                  .whenCompleteAsync(
                      (now, err) -> {
                        if (fresh[0]) {
                          ctx.metrics.reresolved(err == null);
                        }
                        if (err != null || now.equals(old)) {
                          String why =
                              err != null
                                  ? "its pointer was not re-resolved: " + Failures.rootMessage(err)
                                  : "its pointer resolved to itself";
                          handOver(ws, cause, reason + "; " + why);
                        } else {
                          readAgain(ws, now);
                        }
                      },
                      ctx.fallbackThreads);
        });
  }

  /** Reads {@code ws} again from {@code now}, with no second chance. */
  private void readAgain(List<Wanted> ws, DirectoryPointer now) {
    Map<Route, List<Wanted>> byMap = new LinkedHashMap<>();
    for (Wanted w : ws) {
      Wanted moved = w.movedTo(now);
      byMap.computeIfAbsent(moved.route(), k -> new ArrayList<>()).add(moved);
    }
    List<MapBlocks> maps = new ArrayList<>();
    byMap.forEach((k, list) -> maps.add(new MapBlocks(k, list)));
    BlockEnds ends = new BlockEnds(peer, listener, toDisk, fallback, ctx.metrics, null);
    new FetchRequest(ctx, shuffleId, peer, maps, ends, toDisk).start();
  }

  private void handOver(List<Wanted> ws, FallbackCause cause, String reason) {
    List<String> ids = new ArrayList<>();
    ws.forEach(w -> ids.add(w.id()));
    fallback.handOver(peer, ids, listener, toDisk, cause, reason, true);
  }
}
