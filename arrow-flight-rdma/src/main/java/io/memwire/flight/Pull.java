package io.memwire.flight;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.flight.memory.ArenaMemory;
import java.util.concurrent.CompletableFuture;
import org.apache.arrow.flatbuf.RecordBatch;

/**
 * One batch of an RDMA exchange on the client: its IPC header, and the registered block its body is
 * read into. {@link #done} completes (on a transport thread) once every read of the batch has ended
 * and the lease guard was checked; exceptionally, with the block already freed, when they failed or
 * the guard was revoked. Until then the block must not be freed: a read may still land in it.
 */
final class Pull {
  final long seq;
  final RecordBatch header;
  final long bodyLength;
  final byte[] appMetadata;
  final CompletableFuture<Void> done = new CompletableFuture<>();

  @GuardedBy("this")
  private ArenaMemory.Block block;

  Pull(long seq, RecordBatch header, long bodyLength, byte[] appMetadata) {
    this.seq = seq;
    this.header = header;
    this.bodyLength = bodyLength;
    this.appMetadata = appMetadata;
  }

  synchronized void setBlock(ArenaMemory.Block b) {
    block = b;
  }

  synchronized ArenaMemory.Block block() {
    return block;
  }

  /** The block, handed over to the caller (null when there is none or it was taken). */
  synchronized ArenaMemory.Block takeBlock() {
    ArenaMemory.Block b = block;
    block = null;
    return b;
  }

  void freeBlock() {
    ArenaMemory.Block b = takeBlock();
    if (b != null) {
      b.release();
    }
  }
}
