package io.memwire.shuffle.reader;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.DownloadFile;
import org.apache.spark.network.shuffle.DownloadFileWritableChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data stage of a fetch request Spark wants on disk (blocks above {@code
 * spark.network.maxRemoteBlockSizeFetchToMem}): streams the located blocks into Spark's temp files
 * one block after another, each in reads of at most {@code readBatchBytes}, one piece in flight at
 * a time.
 *
 * <p>Threads: the first file is created by the thread that ended location; every piece's write and
 * the next piece's post run on {@code memwire-shuffle-fallback-N}, never on an I/O thread. A failed
 * read discards the file, drops the map output from the cache and hands this block and the rest to
 * Spark's client (cause {@code read}); a failed file operation fails only its block. Each piece's
 * buffer is released after its write, whatever the outcome.
 */
final class ToDiskFetch {
  private static final Logger LOG = LoggerFactory.getLogger(ToDiskFetch.class);

  private final FetchRequest r;
  private final List<Wanted> blocks;

  ToDiskFetch(FetchRequest r, List<Wanted> blocks) {
    this.r = r;
    this.blocks = blocks;
  }

  /** Starts the first block from {@code i} on not ended yet. */
  void next(int i) {
    while (i < blocks.size() && blocks.get(i).done.get()) {
      i++;
    }
    if (i >= blocks.size()) {
      return;
    }
    Wanted w = blocks.get(i);
    DownloadFile file;
    DownloadFileWritableChannel channel;
    try {
      file = r.toDisk.createTempFile(r.ctx.transportConf());
      channel = file.openForWriting();
    } catch (IOException | RuntimeException e) {
      r.fail(w, e);
      next(i + 1);
      return;
    }
    readPiece(i, file, channel, 0);
  }

  private void readPiece(int i, DownloadFile file, DownloadFileWritableChannel channel, long done) {
    Wanted w = blocks.get(i);
    int n = (int) Math.min(w.length - done, r.ctx.readBatchBytes); // readBatchBytes <= 1 GiB
    if (n == 0) {
      finishFile(i, file, channel);
      return;
    }
    CompletableFuture<TransferBuffer> f;
    try {
      f = r.timed(r.connection.read(ReadRequest.of(w.slot.data(), w.offset + done, n)));
    } catch (RuntimeException e) {
      discard(file, channel);
      r.fallbackAll(blocks.subList(i, blocks.size()), FallbackCause.READ, "data read failed: " + e);
      return;
    }
    var unused =
        f.whenCompleteAsync(
            (buf, err) -> {
              if (err != null) {
                discard(file, channel);
                r.ctx.drop(r.shuffleId, w.slotKey());
                r.fallbackAll(
                    blocks.subList(i, blocks.size()),
                    FallbackCause.READ,
                    "data read failed: " + FetchRequest.rootMessage(err));
                return;
              }
              try {
                ByteBuffer b = buf.nioBuffer();
                while (b.hasRemaining()) {
                  channel.write(b);
                }
              } catch (IOException | RuntimeException e) {
                discard(file, channel);
                r.fail(w, e);
                next(i + 1);
                return;
              } finally {
                buf.release();
              }
              if (done + n < w.length) {
                readPiece(i, file, channel, done + n);
              } else {
                finishFile(i, file, channel);
              }
            },
            r.ctx.fallbackThreads);
  }

  private void finishFile(int i, DownloadFile file, DownloadFileWritableChannel channel) {
    Wanted w = blocks.get(i);
    ManagedBuffer onDisk;
    try {
      onDisk = channel.closeAndRead();
    } catch (IOException | RuntimeException e) {
      file.delete();
      r.fail(w, e);
      next(i + 1);
      return;
    }
    r.ctx.counters.rdmaBlocksToDisk.increment();
    r.deliver(w, onDisk, w.length);
    // Spark deletes the file when the iterator is done with it; if it already is, we do.
    if (!r.toDisk.registerTempFileToClean(file)) {
      file.delete();
    }
    next(i + 1);
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
