package io.memwire.shuffle.directory;

import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferNode;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/** The directory tests' one-sided read: a range of a peer's region, copied to the heap. */
final class RegionReads {
  private RegionReads() {}

  /** Reads {@code [offset, offset + length)} of {@code region} on {@code peer} (30 s at most). */
  static ByteBuffer read(
      TransferNode reader, TransferNode peer, RemoteRegion region, long offset, int length)
      throws Exception {
    TransferBuffer b =
        reader
            .connection(peer.localAddress())
            .read(ReadRequest.of(region, offset, length))
            .get(30, TimeUnit.SECONDS);
    try {
      ByteBuffer copy = ByteBuffer.allocate(length);
      copy.put(b.nioBuffer()).flip();
      return copy;
    } finally {
      b.release();
    }
  }
}
