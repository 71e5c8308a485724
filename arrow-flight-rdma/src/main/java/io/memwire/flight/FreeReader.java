package io.memwire.flight;

import io.memwire.flight.wire.ClientMessage;
import io.memwire.flight.wire.WireException;
import java.nio.ByteBuffer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.memory.ArrowBuf;

/**
 * Reads what the client of one RDMA exchange sends: FREE messages, then its half-close. Runs on a
 * pump thread of the producer's executor ({@code memwire-flight-N-exchange-*}) and reports to its
 * session, which does the rest.
 */
final class FreeReader implements Runnable {
  /** What the session does with the client's messages. */
  interface Session {
    /** The client freed the lease {@code seq} (possibly one already released, or twice). */
    void freed(long seq);

    /** The client half-closed: no FREE follows. */
    void halfClosed();

    /** The client sent a message that does not decode. */
    void badMessage(WireException e);

    /** The client's stream broke (cancelled, crashed, or the exchange ended under it). */
    void broken(RuntimeException e);
  }

  private final FlightStream reader;
  private final ServerStats stats;
  private final Session session;

  FreeReader(FlightStream reader, ServerStats stats, Session session) {
    this.reader = reader;
    this.stats = stats;
    this.session = session;
  }

  @Override
  public void run() {
    try {
      while (reader.next()) {
        ArrowBuf md = reader.getLatestMetadata();
        if (md == null) {
          continue;
        }
        ByteBuffer bytes = md.nioBuffer(0, (int) md.readableBytes());
        long[] seqs = ClientMessage.readFree(bytes);
        stats.freeMessages.increment();
        for (long s : seqs) {
          session.freed(s);
        }
      }
      session.halfClosed();
    } catch (WireException e) {
      session.badMessage(e);
    } catch (RuntimeException e) {
      session.broken(e);
    }
  }
}
