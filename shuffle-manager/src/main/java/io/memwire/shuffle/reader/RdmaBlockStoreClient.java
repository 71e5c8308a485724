package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.OutputChecksums;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.Checksum;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.apache.spark.network.shuffle.checksum.Cause;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block-store client one reduce task hands to Spark's ShuffleBlockFetcherIterator. Its own job
 * is routing: for each fetch request (one peer, many blocks) it sends the blocks it cannot read
 * one-sided (no directory pointer, provider mismatch, or everything when reads are delegated) to
 * {@link SparkFallback} and the rest, grouped by map output, to a {@link FetchRequest}, which
 * composes the read stages: {@link SlotLookup} (directory slots not yet known to this executor; a
 * slot that still names another map id after one re-read fails its blocks, so Spark reruns the map
 * stage), {@link IndexLookup} (the index of each map output not cached: whole, kept for later
 * tasks, or only the block's entries), then a {@link BlockSource}: {@link DataFetch} or, for
 * requests Spark wants on disk, {@link ToDiskFetch}. Each block ends once, through {@link
 * BlockEnds}. Once an executor has read a map output's slot and index, its later reduce tasks reach
 * the data in one round trip.
 *
 * <p>The reader brackets each step of Spark's iterator (its construction, each {@code next()}) with
 * {@link #holdRequests()} and {@link #releaseRequests()}: fetch requests Spark issues inside the
 * step are queued ({@link HeldRequests}) and started together, in the order issued, when control
 * returns to the reader. Threads: {@code fetchBlocks} and the hold calls run on the task thread;
 * Spark's client runs on {@code memwire-shuffle-fallback-N}.
 */
public final class RdmaBlockStoreClient extends BlockStoreClient {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaBlockStoreClient.class);

  /** How long a diagnosis waits for its read (Spark's own diagnosis waits on an RPC). */
  private static final Duration DIAGNOSIS_WAIT = Duration.ofSeconds(60);

  private final ReadContext ctx;
  private final int shuffleId;
  private final Map<Long, Route> routes;
  private final BlockStoreClient spark;
  private final SparkFallback fallback;
  private final HeldRequests held = new HeldRequests();

  /**
   * @param routes by map id, for every map output whose location carried a directory pointer
   * @param fallback Spark's own client ({@code blockManager.blockStoreClient})
   */
  public RdmaBlockStoreClient(
      ReadContext ctx, int shuffleId, Map<Long, Route> routes, BlockStoreClient fallback) {
    this.ctx = ctx;
    this.shuffleId = shuffleId;
    this.routes = routes;
    this.spark = fallback;
    this.fallback = new SparkFallback(ctx, fallback);
  }

  @Override
  public void fetchBlocks(
      String host,
      int port,
      String execId,
      String[] blockIds,
      BlockFetchingListener listener,
      DownloadFileManager downloadFileManager) {
    Peer peer = new Peer(host, port, execId);
    if (ctx.delegateAll != null) {
      // Decided for the whole application at start (and logged then): no per-peer log line.
      List<String> all = List.of(blockIds);
      held.post(
          () ->
              fallback.handOver(
                  peer,
                  all,
                  listener,
                  downloadFileManager,
                  ctx.delegateAll,
                  "reads delegated to Spark",
                  false));
      return;
    }
    List<String> viaSpark = new ArrayList<>();
    String reason = null;
    FallbackCause cause = null;
    Map<Route, List<Wanted>> byMap = new LinkedHashMap<>();
    for (String id : blockIds) {
      Wanted w = parse(id);
      if (w == null) {
        viaSpark.add(id);
        reason = "no memwire directory published for its map outputs";
        cause = FallbackCause.NO_DIRECTORY;
      } else if (w.route().pointer().region().segments().get(0).provider() != ctx.node.provider()) {
        viaSpark.add(id);
        reason =
            "peer serves over "
                + w.route().pointer().region().segments().get(0).provider()
                + ", this executor reads over "
                + ctx.node.provider();
        cause = FallbackCause.PROVIDER_MISMATCH;
      } else {
        byMap.computeIfAbsent(w.route(), k -> new ArrayList<>()).add(w);
      }
    }
    if (!viaSpark.isEmpty()) {
      String why = reason;
      FallbackCause c = cause;
      held.post(
          () -> fallback.handOver(peer, viaSpark, listener, downloadFileManager, c, why, true));
    }
    if (!byMap.isEmpty()) {
      held.post(request(peer, byMap, listener, downloadFileManager)::start);
    }
  }

  private FetchRequest request(
      Peer peer,
      Map<Route, List<Wanted>> byMap,
      BlockFetchingListener listener,
      DownloadFileManager downloadFileManager) {
    List<MapBlocks> maps = new ArrayList<>(byMap.size());
    byMap.forEach((key, ws) -> maps.add(new MapBlocks(key, ws)));
    // A download-file manager means Spark wants this request's blocks on disk (above
    // spark.network.maxRemoteBlockSizeFetchToMem).
    BlockEnds.Retry retry =
        ctx.resolution() == null
            ? null
            : new Reresolve(ctx, shuffleId, peer, listener, downloadFileManager, fallback);
    BlockEnds ends =
        new BlockEnds(peer, listener, downloadFileManager, fallback, ctx.metrics, retry);
    return new FetchRequest(ctx, shuffleId, peer, maps, ends, downloadFileManager);
  }

  /** Queues the requests this thread issues from now on, until {@link #releaseRequests()}. */
  public void holdRequests() {
    held.hold();
  }

  /** Posts the queued requests, in the order Spark issued them, and stops holding. */
  public void releaseRequests() {
    held.release();
  }

  private Wanted parse(String id) {
    BlockId b;
    try {
      b = BlockId.apply(id);
    } catch (RuntimeException e) {
      return null;
    }
    long mapId;
    int start;
    int end;
    boolean batch = false;
    if (b instanceof ShuffleBlockId) {
      ShuffleBlockId s = (ShuffleBlockId) b;
      if (s.shuffleId() != shuffleId) {
        return null;
      }
      mapId = s.mapId();
      start = s.reduceId();
      end = start + 1;
    } else if (b instanceof ShuffleBlockBatchId) {
      ShuffleBlockBatchId s = (ShuffleBlockBatchId) b;
      if (s.shuffleId() != shuffleId) {
        return null;
      }
      mapId = s.mapId();
      start = s.startReduceId();
      end = s.endReduceId();
      batch = true;
    } else {
      return null;
    }
    Route r = routes.get(mapId);
    if (r != null && ctx.resolution() != null) {
      // A pointer re-resolved after a service restart: read from where it went.
      r = new Route(ctx.resolution().current(shuffleId, r.pointer()), r.mapIndex());
    }
    if (r == null || r.pointer().slotOffset(r.mapIndex()) < 0 || end <= start) {
      return null;
    }
    return new Wanted(id, mapId, r, start, end, batch);
  }

  /**
   * Spark asks this after its codec failed on a block: the writer's block manager may be gone with
   * its executor, so the block is read again from where Memwire reads it (its region, checked
   * against the checksum its slot carries, re-read once on a mismatch, as any read) and its bytes
   * compared with the checksum the reader computed ({@code checksum}): {@code DISK_ISSUE} when the
   * stored bytes differ from their stored checksum, {@code NETWORK_ISSUE} when only the reader's
   * copy differs, {@code CHECKSUM_VERIFY_PASS} when all agree, {@code UNKNOWN_ISSUE} when no
   * checksum is known (or the algorithm differs, or the read fails). Blocks Memwire does not serve
   * go to Spark's client. Runs on the task thread, outside the held requests; the read is counted
   * in the metrics like any other.
   */
  @Override
  public Cause diagnoseCorruption(
      String host,
      int port,
      String execId,
      int shuffleId,
      long mapId,
      int reduceId,
      long checksum,
      String algorithm) {
    Wanted w =
        shuffleId == this.shuffleId && ctx.delegateAll == null
            ? parse(new ShuffleBlockId(shuffleId, mapId, reduceId).name())
            : null;
    if (w == null
        || w.route().pointer().region().segments().get(0).provider() != ctx.node.provider()) {
      try {
        return spark.diagnoseCorruption(
            host, port, execId, shuffleId, mapId, reduceId, checksum, algorithm);
      } catch (RuntimeException e) {
        return Cause.UNKNOWN_ISSUE;
      }
    }
    Cause c = diagnose(new Peer(host, port, execId), w, checksum, algorithm);
    LOG.info(
        "Diagnosed corrupt block {} from executor {} ({} {}): {}",
        w.id(),
        execId,
        algorithm,
        checksum,
        c);
    return c;
  }

  private Cause diagnose(Peer peer, Wanted w, long checksum, String algorithm) {
    ChecksumAlgorithm a = ChecksumAlgorithm.ofName(algorithm);
    if (a == null) {
      return Cause.UNKNOWN_ISSUE;
    }
    CompletableFuture<ManagedBuffer> read = new CompletableFuture<>();
    BlockFetchingListener l =
        new BlockFetchingListener() {
          @Override
          public void onBlockFetchSuccess(String blockId, ManagedBuffer data) {
            data.retain(); // Spark's listeners release after the call
            if (!read.complete(data)) {
              data.release();
            }
          }

          @Override
          public void onBlockFetchFailure(String blockId, Throwable e) {
            read.completeExceptionally(e);
          }
        };
    Map<Route, List<Wanted>> one = new LinkedHashMap<>();
    one.put(w.route(), List.of(w));
    request(peer, one, l, null).start();
    ManagedBuffer data;
    try {
      data = read.get(DIAGNOSIS_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      return e.getCause() instanceof ChecksumMismatchException
              && e.getCause().getMessage().contains("cause: disk")
          ? Cause.DISK_ISSUE
          : Cause.UNKNOWN_ISSUE;
    } catch (TimeoutException e) {
      return Cause.UNKNOWN_ISSUE;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Cause.UNKNOWN_ISSUE;
    }
    try {
      MapOutput o = ctx.cached(shuffleId, w.route(), w.mapId());
      OutputChecksums sums = o == null ? null : o.slot().checksums();
      if (sums == null || sums.algorithm() != a || w.start() >= sums.values().length) {
        return Cause.UNKNOWN_ISSUE;
      }
      Checksum sum = a.newChecksum();
      sum.update(data.nioByteBuffer());
      long stored = sums.values()[w.start()];
      if (sum.getValue() != stored) {
        return Cause.DISK_ISSUE;
      }
      return stored == checksum ? Cause.CHECKSUM_VERIFY_PASS : Cause.NETWORK_ISSUE;
    } catch (IOException | RuntimeException e) {
      return Cause.UNKNOWN_ISSUE;
    } finally {
      data.release();
    }
  }

  @Override
  public void close() {
    // Per-task object: the node, pool and Spark's client belong to others.
  }
}
