package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.OutputChecksums;
import java.io.IOException;
import java.time.Duration;
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
import org.apache.spark.storage.ShuffleBlockId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block-store client one reduce task hands to Spark's ShuffleBlockFetcherIterator. For each
 * fetch request (one peer, many blocks) its {@link FetchPlanner} decides once what becomes of each
 * block ({@link FetchPlan}), and a {@link FetchRun} carries the plan out: Spark-bound blocks to
 * {@link SparkFallback}, the others through the stages a {@link FetchRequest} composes ({@link
 * SlotLookup}, {@link IndexLookup}, then {@link DataFetch} or, for requests Spark wants on disk,
 * {@link ToDiskFetch}), each block ending once through {@link BlockEnds}. Once an executor has read
 * a map output's slot and index, its later reduce tasks reach the data in one round trip.
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

  private final ReadServices services;
  private final int shuffleId;
  private final FetchPlanner planner;
  private final BlockStoreClient spark;
  private final HeldRequests held = new HeldRequests();

  /**
   * @param routes by map id, for every map output whose location carried a directory pointer
   * @param fallback Spark's own client ({@code blockManager.blockStoreClient})
   */
  public RdmaBlockStoreClient(
      ReadServices services, int shuffleId, Map<Long, Route> routes, BlockStoreClient fallback) {
    this.services = services;
    this.shuffleId = shuffleId;
    this.planner =
        new FetchPlanner(
            shuffleId,
            routes,
            services.node == null ? null : services.node.provider(),
            services.delegateAll,
            services.resolution());
    this.spark = fallback;
  }

  @Override
  public void fetchBlocks(
      String host,
      int port,
      String execId,
      String[] blockIds,
      BlockFetchingListener listener,
      DownloadFileManager downloadFileManager) {
    // A download-file manager means Spark wants this request's blocks on disk (above
    // spark.network.maxRemoteBlockSizeFetchToMem).
    FetchPlan plan =
        planner.plan(new Peer(host, port, execId), blockIds, downloadFileManager != null);
    held.post(new FetchRun(services, shuffleId, spark, plan, listener, downloadFileManager)::start);
  }

  /** Queues the requests this thread issues from now on, until {@link #releaseRequests()}. */
  public void holdRequests() {
    held.hold();
  }

  /** Posts the queued requests, in the order Spark issued them, and stops holding. */
  public void releaseRequests() {
    held.release();
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
        shuffleId == this.shuffleId
            ? planner.oneSided(new ShuffleBlockId(shuffleId, mapId, reduceId).name())
            : null;
    if (w == null) {
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
    new FetchRun(services, shuffleId, spark, planner.single(peer, w), l, null).start();
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
      MapOutput o = services.cache.cached(shuffleId, w.route(), w.mapId());
      OutputChecksums sums = o == null ? null : o.slot().checksums();
      Checksum sum = a.newChecksum();
      sum.update(data.nioByteBuffer());
      if (sums == null && o != null && o.slot().metadataAlgorithm() == a) {
        // A wide output read block by block: the read above checked the bytes against the stored
        // checksum that came with the block's entries (a mismatch would have failed it), so the
        // stored value is the one just computed.
        return sum.getValue() == checksum ? Cause.CHECKSUM_VERIFY_PASS : Cause.NETWORK_ISSUE;
      }
      if (sums == null || sums.algorithm() != a || w.start() >= sums.values().length) {
        return Cause.UNKNOWN_ISSUE;
      }
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
