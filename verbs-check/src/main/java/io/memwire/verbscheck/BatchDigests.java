package io.memwire.verbscheck;

import io.memwire.flight.RdmaFlightClient;
import io.memwire.flight.RdmaFlightStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/** Digests of the batches a Flight stream returns, so gRPC's and the RDMA client's compare. */
final class BatchDigests {
  private BatchDigests() {}

  /** The digest of every batch a plain DoGet of {@code ticket} returns. */
  static List<Long> grpc(FlightClient c, String ticket) throws Exception {
    List<Long> d = new ArrayList<>();
    try (FlightStream s = c.getStream(new Ticket(ticket.getBytes(StandardCharsets.UTF_8)))) {
      while (s.next()) {
        d.add(digest(s.getRoot()));
      }
    }
    return d;
  }

  /**
   * The digest of every batch the RDMA client pulls for {@code ticket}; {@code plane[0]} is set to
   * the data plane it used, {@code plane[1]} (when there) to why it fell back to DoGet, or null.
   */
  static List<Long> rdma(RdmaFlightClient c, String ticket, String[] plane) {
    List<Long> d = new ArrayList<>();
    try (RdmaFlightStream s = c.getStream(new Ticket(ticket.getBytes(StandardCharsets.UTF_8)))) {
      while (s.next()) {
        d.add(digest(s.getRoot()));
      }
      plane[0] = s.dataPlane().toString();
      if (plane.length > 1) {
        plane[1] = s.fallbackReason();
      }
    }
    return d;
  }

  /** Hash of every value and null of every column, in order. */
  private static long digest(VectorSchemaRoot root) {
    long h = root.getRowCount();
    for (int c = 0; c < root.getFieldVectors().size(); c++) {
      BigIntVector v = (BigIntVector) root.getVector(c);
      for (int r = 0; r < v.getValueCount(); r++) {
        long x = v.isNull(r) ? 0x5bd1e995L : v.get(r);
        h = h * 0x100000001B3L ^ x;
      }
    }
    return h;
  }

  /** {@code bytes} over {@code seconds} in MB/s, one decimal. */
  static String megabytesPerSecond(long bytes, double seconds) {
    return String.format(java.util.Locale.ROOT, "%.1f", bytes / seconds / 1e6);
  }
}
