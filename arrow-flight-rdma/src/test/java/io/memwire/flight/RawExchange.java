package io.memwire.flight;

import io.memwire.flight.wire.ClientMessage;
import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.transfer.ProviderKind;
import java.nio.ByteBuffer;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * A client that speaks the data-plane protocol by hand and never reads a body: it decides when (if
 * ever) to FREE, so tests can pin leases, fill the window, crash or cancel at will.
 */
final class RawExchange implements AutoCloseable {
  final FlightClient.ExchangeReaderWriter rw;
  private final BufferAllocator allocator;

  RawExchange(
      FlightClient client,
      BufferAllocator allocator,
      String ticket,
      int windowBatches,
      long windowBytes) {
    this.allocator = allocator;
    ExchangeRequest req =
        new ExchangeRequest(
            ProviderKind.TCP, windowBatches, windowBytes, TestProducer.ticket(ticket).getBytes());
    this.rw = client.doExchange(FlightDescriptor.command(req.toBytes()));
  }

  /** The next server message, or null at the end of the exchange. */
  ServerMessage next() {
    if (!rw.getReader().next()) {
      return null;
    }
    ArrowBuf md = rw.getReader().getLatestMetadata();
    byte[] b = new byte[(int) md.readableBytes()];
    md.getBytes(0, b);
    return ServerMessage.decode(ByteBuffer.wrap(b));
  }

  void free(long... seqs) {
    int size = ClientMessage.freeSize(seqs.length);
    ByteBuffer m = ByteBuffer.allocate(size);
    ClientMessage.writeFree(m, seqs, seqs.length);
    ArrowBuf buf = allocator.buffer(size);
    buf.setBytes(0, m.array());
    buf.writerIndex(size);
    rw.getWriter().putMetadata(buf);
  }

  @Override
  public void close() {
    try {
      rw.close();
    } catch (Exception e) {
      // the exchange may have failed already; close released what it held
    }
  }
}
