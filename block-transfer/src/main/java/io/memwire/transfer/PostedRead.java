package io.memwire.transfer;

import io.memwire.transfer.spi.WireRead;
import java.nio.ByteBuffer;

/** A posted part: what the provider completes. */
final class PostedRead extends WireRead {
  final ReadPiece piece;
  final long postedNanos = System.nanoTime();

  PostedRead(ReadPiece piece, ByteBuffer dst, long dstAddress, long dstKey) {
    super(piece.segment, piece.remoteAddress, piece.length, dst, dstAddress, dstKey);
    this.piece = piece;
  }

  @Override
  protected void onComplete() {
    piece.queue.partEnded(this, null);
  }

  @Override
  protected void onFail(TransferException cause) {
    piece.queue.partEnded(this, cause);
  }
}
