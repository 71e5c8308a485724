package io.memwire.transfer;

import java.nio.ByteBuffer;

/** A part of a request not yet posted. */
final class ReadPiece {
  /** The queue of the connection this piece is read on. */
  final ReadQueue queue;

  final PendingRead request;
  final RegionDescriptor segment;
  final long remoteAddress;
  final int length;
  final int offsetInRequest;

  /** The ordered read waiting for this piece to be posted, or null. */
  volatile ReadGate gate;

  ReadPiece(
      ReadQueue queue,
      PendingRead request,
      RegionDescriptor segment,
      long remoteAddress,
      int length,
      int off) {
    this.queue = queue;
    this.request = request;
    this.segment = segment;
    this.remoteAddress = remoteAddress;
    this.length = length;
    this.offsetInRequest = off;
  }

  /** This piece was handed to the transport or failed: it no longer holds back a gate. */
  void leftQueue() {
    ReadGate g = gate;
    if (g != null) {
      gate = null;
      g.pieceLeft();
    }
  }

  /** The part to post, or null while the pool grows for this piece's request. */
  PostedRead toPart(TransferNode node, long nowNanos) {
    if (!request.hasDestination(node)) {
      return null;
    }
    ByteBuffer dst =
        request
            .destination
            .duplicate()
            .position(offsetInRequest)
            .limit(offsetInRequest + length)
            .slice();
    return new PostedRead(
        this, dst, request.destinationAddress + offsetInRequest, request.destinationKey, nowNanos);
  }
}
