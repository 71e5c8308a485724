package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.DownloadFile;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.apache.spark.network.shuffle.DownloadFileWritableChannel;
import org.apache.spark.network.util.TransportConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block source of a fetch request Spark wants on disk (blocks above {@code
 * spark.network.maxRemoteBlockSizeFetchToMem}): streams the located blocks into Spark's temp files
 * one block after another, each in reads of at most {@code readBatchBytes}, one piece in flight at
 * a time.
 *
 * <p>Threads: the first file is created by the thread that ended location; every piece's write and
 * the next piece's post run on {@code memwire-shuffle-fallback-N}, never on an I/O thread. A failed
 * read discards the file, drops the map output from the cache and hands this block and the rest to
 * Spark's client (cause {@code read}); a failed file operation fails only its block. Each piece's
 * buffer is released after its write, whatever the outcome.
 *
 * <p>Integrity: a block with stored checksums is checked piece by piece as it is written; once
 * whole, a mismatch discards the file and reads the block once more into a new one (a match then is
 * a transfer fault), a second mismatch fails it ({@link ChecksumMismatchException}), as {@link
 * DataFetch} does.
 */
final class ToDiskFetch implements BlockSource {
  private static final Logger LOG = LoggerFactory.getLogger(ToDiskFetch.class);

  private final MapOutputCache cache;
  private final int shuffleId;
  private final ReadMetrics metrics;
  private final ReadSettings settings;
  private final ArrivalTap tap;
  private final Executor threads;
  private final Supplier<TransportConf> transportConf;
  private final PeerLink link;
  private final BlockEnds ends;
  private final DownloadFileManager files;

  /**
   * @param threads where file writes and the next pieces' posts run
   * @param transportConf Spark's shuffle transport settings, for the temp files
   */
  ToDiskFetch(
      MapOutputCache cache,
      int shuffleId,
      ReadMetrics metrics,
      ReadSettings settings,
      ArrivalTap tap,
      Executor threads,
      Supplier<TransportConf> transportConf,
      PeerLink link,
      BlockEnds ends,
      DownloadFileManager files) {
    this.cache = cache;
    this.shuffleId = shuffleId;
    this.metrics = metrics;
    this.settings = settings;
    this.tap = tap;
    this.threads = threads;
    this.transportConf = transportConf;
    this.link = link;
    this.ends = ends;
    this.files = files;
  }

  @Override
  public void read(List<LocatedBlock> blocks) {
    next(blocks, 0);
  }

  /** Starts the first block from {@code i} on not ended yet. */
  private void next(List<LocatedBlock> blocks, int i) {
    while (i < blocks.size() && ends.hasEnded(blocks.get(i).block())) {
      i++;
    }
    if (i >= blocks.size()) {
      return;
    }
    start(blocks, i, null);
  }

  /**
   * Reads block {@code i} into a new temp file; {@code first} is its first read's mismatch when
   * this is the re-read, else null.
   */
  private void start(List<LocatedBlock> blocks, int i, BlockChecksum.Mismatch first) {
    DownloadFile file;
    DownloadFileWritableChannel channel;
    try {
      file = files.createTempFile(transportConf.get());
      channel = file.openForWriting();
    } catch (IOException | RuntimeException e) {
      ends.fail(blocks.get(i).block(), e);
      next(blocks, i + 1);
      return;
    }
    BlockChecksum sums = blocks.get(i).checksum();
    readPiece(
        blocks, i, new Attempt(file, channel, sums == null ? null : sums.verifier(), first), 0);
  }

  /** One read of a block into one temp file, and its check. */
  private record Attempt(
      DownloadFile file,
      DownloadFileWritableChannel channel,
      BlockChecksum.Verifier verifier,
      BlockChecksum.Mismatch first) {}

  private void readPiece(List<LocatedBlock> blocks, int i, Attempt a, long done) {
    DownloadFile file = a.file();
    DownloadFileWritableChannel channel = a.channel();
    LocatedBlock b = blocks.get(i);
    int n = (int) Math.min(b.length() - done, settings.batchBytes()); // readBatchBytes <= 1 GiB
    if (n == 0) {
      finishFile(blocks, i, a);
      return;
    }
    CompletableFuture<TransferBuffer> f;
    try {
      f = link.read(ReadRequest.of(b.data(), b.offset() + done, n));
    } catch (RuntimeException e) {
      discard(file, channel);
      readFailed(blocks, i, a, e.toString());
      return;
    }
    var unused =
        f.whenCompleteAsync(
            (buf, err) -> {
              if (err != null) {
                discard(file, channel);
                cache.drop(shuffleId, b.source());
                readFailed(blocks, i, a, Failures.rootMessage(err));
                return;
              }
              try {
                ByteBuffer bytes = buf.nioBuffer();
                if (a.verifier() != null) {
                  tap.arrived(bytes);
                  a.verifier().update(bytes);
                }
                while (bytes.hasRemaining()) {
                  channel.write(bytes);
                }
              } catch (IOException | RuntimeException e) {
                discard(file, channel);
                ends.fail(b.block(), e);
                next(blocks, i + 1);
                return;
              } finally {
                buf.release();
              }
              if (done + n < b.length()) {
                readPiece(blocks, i, a, done + n);
              } else {
                finishFile(blocks, i, a);
              }
            },
            threads);
  }

  private void finishFile(List<LocatedBlock> blocks, int i, Attempt a) {
    DownloadFile file = a.file();
    DownloadFileWritableChannel channel = a.channel();
    LocatedBlock b = blocks.get(i);
    if (a.verifier() == null) {
      metrics.unverified();
    } else {
      BlockChecksum.Mismatch m = a.verifier().finish();
      if (m != null) {
        discard(file, channel);
        if (a.first() == null) {
          start(blocks, i, m); // once more from the same region, into a new file
        } else {
          metrics.checksumMismatch(true);
          cache.drop(shuffleId, b.source());
          ends.fail(b.block(), new ChecksumMismatchException(b, link.execId(), a.first(), m));
          next(blocks, i + 1);
        }
        return;
      }
      if (a.first() != null) {
        metrics.checksumMismatch(false);
      }
      metrics.verified();
    }
    ManagedBuffer onDisk;
    try {
      onDisk = channel.closeAndRead();
    } catch (IOException | RuntimeException e) {
      file.delete();
      ends.fail(b.block(), e);
      next(blocks, i + 1);
      return;
    }
    ends.deliver(b.block(), onDisk, b.length());
    // Spark deletes the file when the iterator is done with it; if it already is, we do.
    if (!files.registerTempFileToClean(file)) {
      file.delete();
    }
    next(blocks, i + 1);
  }

  /**
   * A failed read sends block {@code i} and the rest to Spark's client, except a block that
   * mismatched once: it fails (Spark's client would serve the same stored bytes unchecked).
   */
  private void readFailed(List<LocatedBlock> blocks, int i, Attempt a, String why) {
    int from = i;
    if (a.first() != null) {
      LocatedBlock b = blocks.get(i);
      ends.fail(b.block(), ChecksumMismatchException.unconfirmed(b, link.execId(), a.first(), why));
      from = i + 1;
    }
    ends.fallback(
        LocatedBlock.blocksOf(blocks.subList(from, blocks.size())),
        FallbackCause.READ,
        "data read failed: " + why);
  }

  private void discard(DownloadFile file, DownloadFileWritableChannel channel) {
    try {
      channel.close();
    } catch (IOException | RuntimeException e) {
      LOG.debug("closing temp file {}", file.path(), e);
    }
    file.delete();
  }
}
