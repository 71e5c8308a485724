package io.memwire.flight;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * The producer behind every test server. Tickets are data-set names ({@link Datasets}) or: {@code
 * many:<batches>:<rows>} (BIGINT batches, one reused root, stops when cancelled), {@code
 * zc:<batches>:<rows>} (zero-copy: fresh buffers per batch from {@link #zeroCopyAllocator}), {@code
 * zcsame:<batches>:<rows>} (zero-copy: the same buffers leased again for every batch), {@code
 * fail:<batches>:<message>} (errors after that many batches), {@code missing} (NOT_FOUND).
 * Endpoints list no location ("this service").
 */
final class TestProducer extends NoOpFlightProducer {
  final BufferAllocator allocator;
  volatile BufferAllocator zeroCopyAllocator;
  final AtomicInteger cancellationsSeen = new AtomicInteger();
  final AtomicInteger streamsCompleted = new AtomicInteger();

  TestProducer(BufferAllocator allocator) {
    this.allocator = allocator;
  }

  static Ticket ticket(String name) {
    return new Ticket(name.getBytes(StandardCharsets.UTF_8));
  }

  static long value(int batch, int row) {
    return ((long) batch << 32) | row;
  }

  @Override
  public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
    String name = new String(ticket.getBytes(), StandardCharsets.UTF_8);
    String[] p = name.split(":", 3);
    switch (p[0]) {
      case "missing":
        throw CallStatus.NOT_FOUND
            .withDescription("no data set named " + name)
            .toRuntimeException();
      case "many":
        many(Integer.parseInt(p[1]), Integer.parseInt(p[2]), allocator, false, listener);
        return;
      case "zc":
        many(Integer.parseInt(p[1]), Integer.parseInt(p[2]), zeroCopyAllocator, true, listener);
        return;
      case "zcsame":
        same(Integer.parseInt(p[1]), Integer.parseInt(p[2]), listener);
        return;
      case "fail":
        try (VectorSchemaRoot root = VectorSchemaRoot.create(Datasets.schema(name), allocator)) {
          listener.start(root);
          for (int b = 0; b < Integer.parseInt(p[1]); b++) {
            fillLongs(root, b, 100);
            listener.putNext();
          }
          listener.error(CallStatus.INTERNAL.withDescription(p[2]).toRuntimeException());
        }
        return;
      default:
        Datasets.stream(name, allocator, listener);
        streamsCompleted.incrementAndGet();
    }
  }

  private void many(
      int batches,
      int rows,
      BufferAllocator alloc,
      boolean zeroCopy,
      ServerStreamListener listener) {
    try (VectorSchemaRoot root = VectorSchemaRoot.create(Datasets.schema("many:"), alloc)) {
      if (zeroCopy) {
        listener.setUseZeroCopy(true);
      }
      listener.start(root);
      for (int b = 0; b < batches; b++) {
        if (listener.isCancelled()) {
          cancellationsSeen.incrementAndGet();
          return;
        }
        fillLongs(root, b, rows); // allocateNew: fresh buffers, as zero-copy requires
        listener.putNext();
      }
      listener.completed();
      streamsCompleted.incrementAndGet();
    }
  }

  /** One batch filled once and leased in place {@code batches} times (a table served again). */
  private void same(int batches, int rows, ServerStreamListener listener) {
    try (VectorSchemaRoot root =
        VectorSchemaRoot.create(Datasets.schema("zcsame:"), zeroCopyAllocator)) {
      listener.setUseZeroCopy(true);
      listener.start(root);
      fillLongs(root, 0, rows);
      for (int b = 0; b < batches && !listener.isCancelled(); b++) {
        listener.putNext();
      }
      listener.completed();
    }
  }

  static void fillLongs(VectorSchemaRoot root, int batch, int rows) {
    root.allocateNew();
    BigIntVector v = (BigIntVector) root.getVector(0);
    v.allocateNew(rows);
    for (int r = 0; r < rows; r++) {
      if (r % 17 == 16) {
        v.setNull(r);
      } else {
        v.set(r, value(batch, r));
      }
    }
    root.setRowCount(rows);
  }

  @Override
  public FlightInfo getFlightInfo(CallContext context, FlightDescriptor descriptor) {
    String name = descriptor.getPath().get(0);
    return new FlightInfo(
        Datasets.schema(name), descriptor, List.of(new FlightEndpoint(ticket(name))), -1, -1);
  }
}
