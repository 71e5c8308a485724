package io.memwire.tpcds.verify;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A query's complete result in a form that crosses process boundaries as JSON without losing
 * precision: each cell is null, a {@link Double} (for DOUBLE and FLOAT columns) or a string
 * (everything else: decimals as their plain digits with full scale, dates as ISO text, integers as
 * digits).
 */
public record Answer(List<String> columns, List<String> types, List<List<Object>> rows) {

  /** Encodes collected Spark rows with their schema. */
  public static Answer of(StructType schema, List<Row> rows) {
    List<String> columns = new ArrayList<>();
    List<String> types = new ArrayList<>();
    for (StructField field : schema.fields()) {
      columns.add(field.name());
      types.add(field.dataType().simpleString());
    }
    boolean[] floating = new boolean[schema.fields().length];
    for (int i = 0; i < floating.length; i++) {
      DataType t = schema.fields()[i].dataType();
      floating[i] = t.equals(DataTypes.DoubleType) || t.equals(DataTypes.FloatType);
    }
    List<List<Object>> encoded = new ArrayList<>(rows.size());
    for (Row row : rows) {
      Object[] cells = new Object[row.length()];
      for (int i = 0; i < cells.length; i++) {
        Object v = row.get(i);
        if (v == null) {
          cells[i] = null;
        } else if (floating[i]) {
          cells[i] = ((Number) v).doubleValue();
        } else if (v instanceof BigDecimal d) {
          cells[i] = d.toPlainString();
        } else {
          cells[i] = v.toString();
        }
      }
      encoded.add(Arrays.asList(cells));
    }
    return new Answer(columns, types, encoded);
  }

  /** Whether column {@code i} holds floating-point values (compared with a tolerance). */
  public boolean isFloating(int i) {
    String t = types.get(i);
    return t.equals("double") || t.equals("float");
  }
}
