package io.memwire.transfer;

import io.memwire.transfer.spi.WireRead;
import java.nio.ByteBuffer;

/** A posted part: what the provider completes. */
final class PostedRead extends WireRead {
  final ReadPiece piece;

  /** When it was posted, on the node's clock (the read timeout's start). */
  final long postedNanos;

  PostedRead(ReadPiece piece, ByteBuffer dst, long dstAddress, long dstKey, long postedNanos) {
    super(piece.segment, piece.remoteAddress, piece.length, dst, dstAddress, dstKey);
    this.piece = piece;
    this.postedNanos = postedNanos;
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
