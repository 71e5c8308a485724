package io.memwire.verbscheck;

import io.memwire.flight.SampleBatches;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The producer the Flight check serves: tickets {@code rows:batches}; batch {@code b} is {@link
 * SampleBatches#fill} with seed {@code b} (value {@code r * (c + 1) + b} in row r of column c,
 * every 101st null). The copying producer fills one root per batch; the in-place one serves batches
 * built once in the wrapper's registered memory and declares zero-copy.
 */
final class CheckProducer extends NoOpFlightProducer implements AutoCloseable {
  private static final Schema SCHEMA = SampleBatches.SCHEMA;

  /** The ticket of {@code batches} batches of {@code rows} rows. */
  static Ticket ticket(int rows, int batches) {
    return new Ticket((rows + ":" + batches).getBytes(StandardCharsets.UTF_8));
  }

  /** Bytes of one batch body of {@code rows} rows (4 BIGINT columns with validity). */
  static long bodyBytes(int rows) {
    return SampleBatches.bodyBytes(rows);
  }

  private final BufferAllocator allocator;
  private final boolean inPlace;
  volatile BufferAllocator tableAllocator;
  private final Map<Integer, List<ArrowRecordBatch>> tables = new ConcurrentHashMap<>();

  CheckProducer(BufferAllocator allocator, boolean inPlace) {
    this.allocator = allocator;
    this.inPlace = inPlace;
  }

  @Override
  public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
    String[] p = new String(ticket.getBytes(), StandardCharsets.UTF_8).split(":");
    int rows = Integer.parseInt(p[0]);
    int batches = Integer.parseInt(p[1]);
    BufferAllocator a = inPlace ? tableAllocator : allocator;
    try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, a)) {
      if (inPlace) {
        List<ArrowRecordBatch> t =
            tables.computeIfAbsent(
                rows * 64 + batches,
                k -> {
                  List<ArrowRecordBatch> l = new ArrayList<>();
                  try (VectorSchemaRoot r = VectorSchemaRoot.create(SCHEMA, a)) {
                    for (int b = 0; b < batches; b++) {
                      fill(r, rows, b);
                      l.add(new VectorUnloader(r).getRecordBatch());
                    }
                  }
                  return l;
                });
        VectorLoader loader = new VectorLoader(root);
        listener.setUseZeroCopy(true);
        listener.start(root);
        for (int b = 0; b < batches && !listener.isCancelled(); b++) {
          loader.load(t.get(b));
          listener.putNext();
        }
      } else {
        listener.start(root);
        for (int b = 0; b < batches && !listener.isCancelled(); b++) {
          fill(root, rows, b);
          listener.putNext();
        }
      }
      listener.completed();
    }
  }

  private static void fill(VectorSchemaRoot root, int rows, int seed) {
    SampleBatches.fill(root, rows, seed);
  }

  @Override
  public void close() {
    tables.values().forEach(t -> t.forEach(ArrowRecordBatch::close));
    tables.clear();
  }
}
