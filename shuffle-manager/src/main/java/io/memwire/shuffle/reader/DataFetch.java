package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.spark.network.buffer.NioManagedBuffer;

/**
 * The block source of a fetch request whose blocks go to memory: reads the located ranges in
 * batches of at most {@code readBatchBlocks} blocks and {@code readBatchBytes} bytes, posting the
 * next batch only once the previous one has ended, and hands each block to Spark as it arrives.
 *
 * <p>Threads: the first batch is posted by the thread that ended location (task thread or I/O
 * thread); each block's delivery, and the next batch's post, run on the thread completing the read.
 * A block whose read fails drops its map output from the cache and goes to Spark's client (cause
 * {@code read}); a zero-length block is delivered empty without a read.
 *
 * <p>Integrity: a block with stored checksums ({@link LocatedBlock#checksum()}) is checked before
 * Spark sees it, each reduce partition against Spark's value. A mismatch is read once more from the
 * same region (on the completing thread): a match then is a transfer fault (counted {@code
 * checksumMismatches.network}) and the re-read bytes are delivered; a second mismatch fails the
 * block ({@link ChecksumMismatchException}, counted {@code checksumMismatches.disk}), so Spark
 * reruns the map.
 */
final class DataFetch implements BlockSource {
  private final MapOutputCache cache;
  private final int shuffleId;
  private final ReadMetrics metrics;
  private final ReadSettings settings;
  private final ArrivalTap tap;
  private final PeerLink link;
  private final BlockEnds ends;

  DataFetch(
      MapOutputCache cache,
      int shuffleId,
      ReadMetrics metrics,
      ReadSettings settings,
      ArrivalTap tap,
      PeerLink link,
      BlockEnds ends) {
    this.cache = cache;
    this.shuffleId = shuffleId;
    this.metrics = metrics;
    this.settings = settings;
    this.tap = tap;
    this.link = link;
    this.ends = ends;
  }

  @Override
  public void read(List<LocatedBlock> blocks) {
    post(blocks, 0);
  }

  /** Posts one batch of reads from {@code from} on; the rest when it ends. */
  private void post(List<LocatedBlock> blocks, int from) {
    List<LocatedBlock> batchBlocks = new ArrayList<>();
    List<ReadRequest> reqs = new ArrayList<>();
    long bytes = 0;
    int i = from;
    for (; i < blocks.size(); i++) {
      LocatedBlock b = blocks.get(i);
      if (b.length() == 0) {
        // Spark reports a zero-size block as a fetch failure, as with its own transfer.
        ends.deliver(b.block(), new NioManagedBuffer(ByteBuffer.allocate(0)), 0);
        continue;
      }
      if (!batchBlocks.isEmpty()
          && (batchBlocks.size() >= settings.batchBlocks()
              || bytes + b.length() > settings.batchBytes())) {
        break;
      }
      batchBlocks.add(b);
      reqs.add(ReadRequest.of(b.data(), b.offset(), (int) b.length()));
      bytes += b.length();
    }
    if (batchBlocks.isEmpty()) {
      return;
    }
    int next = i;
    ReadBatch batch;
    try {
      batch = link.read(reqs);
    } catch (RuntimeException e) {
      ends.fallback(
          LocatedBlock.blocksOf(blocks.subList(from, blocks.size())),
          FallbackCause.READ,
          "data read failed: " + e);
      return;
    }
    for (int k = 0; k < batchBlocks.size(); k++) {
      LocatedBlock b = batchBlocks.get(k);
      CompletableFuture<TransferBuffer> f = batch.result(k);
      var unused =
          f.whenComplete(
              (buf, err) -> {
                if (err != null) {
                  cache.drop(shuffleId, b.source());
                  ends.fallback(
                      List.of(b.block()),
                      FallbackCause.READ,
                      "data read failed: " + Failures.rootMessage(err));
                } else {
                  checkAndDeliver(b, buf, null);
                }
              });
    }
    if (next < blocks.size()) {
      var unused = batch.all().whenComplete((ok, err) -> post(blocks, next));
    }
  }

  /**
   * Delivers {@code buf} when it matches {@code b}'s checksums (or it has none); else re-reads it
   * once ({@code first}: null on the first read) or fails it.
   */
  private void checkAndDeliver(LocatedBlock b, TransferBuffer buf, BlockChecksum.Mismatch first) {
    if (b.checksum() == null) {
      metrics.unverified();
      ends.deliver(b.block(), new TransferManagedBuffer(buf), b.length());
      return;
    }
    BlockChecksum.Mismatch m;
    try {
      ByteBuffer bytes = buf.nioBuffer();
      tap.arrived(bytes);
      BlockChecksum.Verifier v = b.checksum().verifier();
      v.update(bytes);
      m = v.finish();
    } catch (RuntimeException e) {
      buf.release();
      throw e;
    }
    if (m == null) {
      if (first != null) {
        metrics.checksumMismatch(false);
      }
      metrics.verified();
      ends.deliver(b.block(), new TransferManagedBuffer(buf), b.length());
      return;
    }
    buf.release();
    if (first != null) {
      metrics.checksumMismatch(true);
      cache.drop(shuffleId, b.source());
      ends.fail(b.block(), new ChecksumMismatchException(b, link.execId(), first, m));
      return;
    }
    CompletableFuture<TransferBuffer> again;
    try {
      again = link.read(ReadRequest.of(b.data(), b.offset(), (int) b.length()));
    } catch (RuntimeException e) {
      rereadFailed(b, m, e.toString());
      return;
    }
    var unused =
        again.whenComplete(
            (buf2, err) -> {
              if (err != null) {
                rereadFailed(b, m, Failures.rootMessage(err));
              } else {
                checkAndDeliver(b, buf2, m);
              }
            });
  }

  /**
   * A block that mismatched once and could not be read again fails (never to Spark's client, which
   * would serve the same stored bytes unchecked).
   */
  private void rereadFailed(LocatedBlock b, BlockChecksum.Mismatch m, String why) {
    cache.drop(shuffleId, b.source());
    ends.fail(b.block(), ChecksumMismatchException.unconfirmed(b, link.execId(), m, why));
  }
}
