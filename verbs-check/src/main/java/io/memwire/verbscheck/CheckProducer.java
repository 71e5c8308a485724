package io.memwire.verbscheck;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The producer the Flight check serves: tickets {@code rows:batches}; batch {@code b} holds value
 * {@code r * (c + 1) + b} in row r of column c (every 101st null). The copying producer fills one
 * root per batch; the in-place one serves batches built once in the wrapper's registered memory and
 * declares zero-copy.
 */
final class CheckProducer extends NoOpFlightProducer implements AutoCloseable {
  private static final Schema SCHEMA =
      new Schema(List.of(field("a"), field("b"), field("c"), field("d")));

  private static Field field(String name) {
    return new Field(name, FieldType.nullable(new ArrowType.Int(64, true)), null);
  }

  /** The ticket of {@code batches} batches of {@code rows} rows. */
  static Ticket ticket(int rows, int batches) {
    return new Ticket((rows + ":" + batches).getBytes(StandardCharsets.UTF_8));
  }

  /** Bytes of one batch body of {@code rows} rows (4 BIGINT columns with validity). */
  static long bodyBytes(int rows) {
    long validity = ((rows + 7L) / 8 + 7) / 8 * 8;
    return 4 * (validity + 8L * rows);
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
    for (int c = 0; c < 4; c++) {
      BigIntVector v = (BigIntVector) root.getVector(c);
      v.allocateNew(rows);
      for (int r = 0; r < rows; r++) {
        if (r % 101 == 100) {
          v.setNull(r);
        } else {
          v.set(r, (long) r * (c + 1) + seed);
        }
      }
      v.setValueCount(rows);
    }
    root.setRowCount(rows);
  }

  @Override
  public void close() {
    tables.values().forEach(t -> t.forEach(ArrowRecordBatch::close));
    tables.clear();
  }
}
