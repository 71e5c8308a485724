package io.memwire.tpcds.data;

import io.trino.tpcds.Table;
import io.trino.tpcds.column.Column;
import io.trino.tpcds.column.ColumnType;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Spark schemas for the 24 TPC-DS tables, derived from the generator's own column types
 * (identifiers as BIGINT, decimals with their precision and scale, dates as DATE), and the
 * conversion of one generated row (strings, null for SQL NULL) into a Spark {@link Row}.
 *
 * <p>Column names are the ones Spark's query files use. The generator follows a later TPC-DS
 * specification in three names (see {@link #RENAMED}); those columns are written under the query
 * files' names.
 */
public final class TpcdsSchema {
  /**
   * Generator column name to the name Spark's {@code tpcds/q*.sql} files (and Spark's own TPC-DS
   * schema) use: the generator spells two of them differently and turns {@code c_last_review_date}
   * into a date key.
   */
  public static final Map<String, String> RENAMED =
      Map.of(
          "c_last_review_date_sk", "c_last_review_date",
          "p_response_targe", "p_response_target",
          "s_tax_precentage", "s_tax_percentage");

  private TpcdsSchema() {}

  /** The Spark name of a generator column. */
  public static String columnName(Column column) {
    return RENAMED.getOrDefault(column.getName(), column.getName());
  }

  /**
   * The 24 TPC-DS tables in generator order (the generator's bookkeeping table dbgen_version is
   * left out).
   */
  public static List<Table> tables() {
    List<Table> tables = new ArrayList<>();
    for (Table table : Table.getBaseTables()) {
      if (table != Table.DBGEN_VERSION) {
        tables.add(table);
      }
    }
    return tables;
  }

  /**
   * The table with this name, e.g. {@code store_sales}; names the valid ones when it does not
   * exist.
   */
  public static Table table(String name) {
    for (Table table : tables()) {
      if (table.getName().equals(name.toLowerCase(Locale.ROOT))) {
        return table;
      }
    }
    throw new IllegalArgumentException(
        "Unknown TPC-DS table '"
            + name
            + "'; known: "
            + tables().stream().map(Table::getName).toList());
  }

  /** The Spark schema of {@code table}; columns are nullable, as in TPC-DS. */
  public static StructType structType(Table table) {
    Column[] columns = table.getColumns();
    StructField[] fields = new StructField[columns.length];
    for (Column column : columns) {
      fields[column.getPosition()] =
          DataTypes.createStructField(columnName(column), sparkType(column.getType()), true);
    }
    return DataTypes.createStructType(fields);
  }

  static DataType sparkType(ColumnType type) {
    return switch (type.getBase()) {
      case IDENTIFIER -> DataTypes.LongType;
      case INTEGER -> DataTypes.IntegerType;
      case DATE -> DataTypes.DateType;
      case DECIMAL ->
          DataTypes.createDecimalType(
              type.getPrecision().orElseThrow(), type.getScale().orElseThrow());
      case CHAR, VARCHAR, TIME -> DataTypes.StringType;
    };
  }

  /**
   * Converts generated rows of one table into Spark rows. Built once per task; not
   * thread-safe-sensitive (it keeps no mutable state).
   */
  public static final class RowConverter {
    private final ColumnType[] types;
    private final boolean localDates;

    /**
     * A converter for rows of {@code table}. {@code localDates} picks the external type of DATE
     * values: {@link LocalDate} when the session has {@code spark.sql.datetime.java8API.enabled},
     * else {@link java.sql.Date}. Spark 4 accepts either; Spark 3.5's row encoder only the one the
     * setting names.
     */
    public RowConverter(Table table, boolean localDates) {
      this.localDates = localDates;
      Column[] columns = table.getColumns();
      types = new ColumnType[columns.length];
      for (Column column : columns) {
        types[column.getPosition()] = column.getType();
      }
    }

    /** One Spark row from the generator's string values (null means SQL NULL). */
    public Row toRow(List<String> values) {
      if (values.size() != types.length) {
        throw new IllegalArgumentException(
            "Expected " + types.length + " values, got " + values.size());
      }
      Object[] cells = new Object[types.length];
      for (int i = 0; i < types.length; i++) {
        cells[i] = convert(values.get(i), types[i], localDates);
      }
      return RowFactory.create(cells);
    }

    private static Object convert(String value, ColumnType type, boolean localDates) {
      if (value == null) {
        return null;
      }
      return switch (type.getBase()) {
        case IDENTIFIER -> Long.parseLong(value);
        case INTEGER -> Integer.parseInt(value);
        case DATE ->
            localDates ? LocalDate.parse(value) : java.sql.Date.valueOf(LocalDate.parse(value));
        // The generator prints exactly the column's scale; setScale only normalises, never rounds.
        case DECIMAL ->
            new BigDecimal(value).setScale(type.getScale().orElseThrow(), RoundingMode.UNNECESSARY);
        case CHAR, VARCHAR, TIME -> value;
      };
    }
  }
}
