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
 * The data stage of a fetch request whose blocks go to memory: reads the located ranges in batches
 * of at most {@code readBatchBlocks} blocks and {@code readBatchBytes} bytes, posting the next
 * batch only once the previous one has ended, and hands each block to Spark as it arrives.
 *
 * <p>Threads: the first batch is posted by the thread that ended location (task thread or I/O
 * thread); each block's delivery, and the next batch's post, run on the thread completing the read.
 * A block whose read fails drops its map output from the cache and goes to Spark's client (cause
 * {@code read}); a zero-length block is delivered empty without a read.
 */
final class DataFetch {
  private final FetchRequest r;
  private final List<Wanted> blocks;

  DataFetch(FetchRequest r, List<Wanted> blocks) {
    this.r = r;
    this.blocks = blocks;
  }

  /** Posts one batch of reads from {@code from} on; the rest when it ends. */
  void post(int from) {
    List<Wanted> batchBlocks = new ArrayList<>();
    List<ReadRequest> reqs = new ArrayList<>();
    long bytes = 0;
    int i = from;
    for (; i < blocks.size(); i++) {
      Wanted w = blocks.get(i);
      if (w.length == 0) {
        // Spark reports a zero-size block as a fetch failure, as with its own transfer.
        r.deliver(w, new NioManagedBuffer(ByteBuffer.allocate(0)), 0);
        continue;
      }
      if (!batchBlocks.isEmpty()
          && (batchBlocks.size() >= r.ctx.readBatchBlocks
              || bytes + w.length > r.ctx.readBatchBytes)) {
        break;
      }
      batchBlocks.add(w);
      reqs.add(ReadRequest.of(w.slot.data(), w.offset, (int) w.length));
      bytes += w.length;
    }
    if (batchBlocks.isEmpty()) {
      return;
    }
    int next = i;
    ReadBatch batch;
    try {
      batch = r.timed(r.connection.read(reqs));
    } catch (RuntimeException e) {
      r.fallbackAll(
          blocks.subList(from, blocks.size()), FallbackCause.READ, "data read failed: " + e);
      return;
    }
    for (int k = 0; k < batchBlocks.size(); k++) {
      Wanted w = batchBlocks.get(k);
      CompletableFuture<TransferBuffer> f = batch.result(k);
      var unused =
          f.whenComplete(
              (buf, err) -> {
                if (err != null) {
                  r.ctx.drop(r.shuffleId, w.slotKey());
                  r.fallbackAll(
                      List.of(w),
                      FallbackCause.READ,
                      "data read failed: " + FetchRequest.rootMessage(err));
                } else {
                  r.deliver(w, new TransferManagedBuffer(buf), w.length);
                }
              });
    }
    if (next < blocks.size()) {
      var unused = batch.all().whenComplete((ok, err) -> post(next));
    }
  }
}
