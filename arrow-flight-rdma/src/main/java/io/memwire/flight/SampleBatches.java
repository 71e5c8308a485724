package io.memwire.flight;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The record batches Memwire's Flight benchmark and its verbs check serve: {@value #COLUMNS}
 * nullable BIGINT columns where row {@code r} of column {@code c} holds {@code r * (c + 1) + seed}
 * and every 101st row is null, so a reader can check every value it received.
 */
public final class SampleBatches {
  /** Columns of {@link #SCHEMA}. */
  public static final int COLUMNS = 4;

  /** {@value #COLUMNS} nullable BIGINT columns {@code c0}, {@code c1}, ... */
  public static final Schema SCHEMA;

  static {
    List<Field> f = new ArrayList<>();
    for (int c = 0; c < COLUMNS; c++) {
      f.add(Field.nullable("c" + c, new ArrowType.Int(64, true)));
    }
    SCHEMA = new Schema(f);
  }

  private SampleBatches() {}

  /**
   * Fills every column of a root of {@link #SCHEMA} with {@code rows} fresh values (allocating new
   * buffers, as a zero-copy producer must) and sets its row count.
   */
  public static void fill(VectorSchemaRoot root, int rows, int seed) {
    for (int c = 0; c < COLUMNS; c++) {
      BigIntVector v = (BigIntVector) root.getVector(c);
      v.allocateNew(rows);
      for (int r = 0; r < rows; r++) {
        if (r % 101 == 100) {
          v.setNull(r);
        } else {
          v.set(r, value(r, c, seed));
        }
      }
      v.setValueCount(rows);
    }
    root.setRowCount(rows);
  }

  /** The value {@link #fill} puts in row {@code row} of column {@code column} (unless null). */
  public static long value(int row, int column, int seed) {
    return (long) row * (column + 1) + seed;
  }

  /** Bytes of one uncompressed batch body of {@code rows} rows (data and 8-aligned validity). */
  public static long bodyBytes(int rows) {
    long validity = ((rows + 7L) / 8 + 7) / 8 * 8;
    return COLUMNS * ((long) rows * 8 + validity);
  }
}
