package io.memwire.tpcds.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.trino.tpcds.Table;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Spark side of generation, on an in-process {@code local[2]} session. */
class TpcdsDataGeneratorTest {
  private static final double SCALE = 0.01;
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    spark =
        SparkSession.builder()
            .master("local[2]")
            .appName("generator-test")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate();
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  @Test
  void parquetWrittenInManyTasksEqualsParquetWrittenInOne(@TempDir Path dir) throws IOException {
    TpcdsDataGenerator whole =
        new TpcdsDataGenerator(spark, new ChunkPlanner(Long.MAX_VALUE / 2), s -> {});
    TpcdsDataGenerator split = new TpcdsDataGenerator(spark, new ChunkPlanner(2_000), s -> {});
    long n1 = whole.writeTable(Table.WEB_SALES, SCALE, dir.resolve("one"));
    long n2 = split.writeTable(Table.WEB_SALES, SCALE, dir.resolve("many"));
    assertEquals(n1, n2);
    assertTrue(parquetFiles(dir.resolve("many")) > 5, "split output has several files");
    assertEquals(1, parquetFiles(dir.resolve("one")));
    Dataset<Row> a = spark.read().parquet(dir.resolve("one").toString());
    Dataset<Row> b = spark.read().parquet(dir.resolve("many").toString());
    assertEquals(0, a.exceptAll(b).count());
    assertEquals(0, b.exceptAll(a).count());
  }

  @Test
  void columnsHaveProperTypes(@TempDir Path dir) {
    TpcdsDataGenerator generator =
        new TpcdsDataGenerator(
            spark, new ChunkPlanner(ChunkPlanner.DEFAULT_COST_PER_CHUNK), s -> {});
    long rows = generator.writeTable(Table.STORE, SCALE, dir.resolve("store"));
    assertEquals(ChunkPlanner.generatorRows(Table.STORE, SCALE), rows);
    Dataset<Row> store = spark.read().parquet(dir.resolve("store").toString());
    StructType schema = store.schema();
    assertEquals(DataTypes.LongType, schema.apply("s_store_sk").dataType());
    assertEquals(DataTypes.IntegerType, schema.apply("s_number_employees").dataType());
    assertEquals(DataTypes.DateType, schema.apply("s_rec_start_date").dataType());
    assertEquals(DataTypes.createDecimalType(5, 2), schema.apply("s_tax_percentage").dataType());
    assertEquals(DataTypes.StringType, schema.apply("s_store_name").dataType());
    assertEquals(schema, TpcdsSchema.structType(Table.STORE));
    // Current rows of a slowly changing dimension have no end date: NULL, not an empty string.
    assertTrue(store.filter("s_rec_end_date IS NULL").count() > 0);
    assertTrue(store.filter("s_rec_start_date >= DATE'1997-01-01'").count() > 0);
  }

  /**
   * Spark 3.5 writes rows through a strict encoder that takes only the DATE type the session's
   * {@code spark.sql.datetime.java8API.enabled} names; {@link Encoders#row} is such an encoder on
   * every line.
   */
  @Test
  void dateValuesHaveTheTypeTheSessionAsksFor() {
    StructType schema = TpcdsSchema.structType(Table.STORE);
    Chunk chunk = new ChunkPlanner(Long.MAX_VALUE / 2).plan(Table.STORE, SCALE).get(0);
    try {
      for (boolean java8 : new boolean[] {false, true}) {
        spark.conf().set("spark.sql.datetime.java8API.enabled", java8);
        List<Row> rows = new ArrayList<>();
        ChunkGenerator.rows(chunk, TpcdsDataGenerator.localDates(spark))
            .forEachRemaining(rows::add);
        List<Row> back = spark.createDataset(rows, Encoders.row(schema)).collectAsList();
        assertTrue(back.size() > 0);
        assertEquals(rows.size(), back.size());
        Object date = back.get(0).getAs("s_rec_start_date");
        assertEquals(java8 ? LocalDate.class : java.sql.Date.class, date.getClass());
        assertEquals(rows.get(0).get(schema.fieldIndex("s_rec_start_date")), date);
      }
    } finally {
      spark.conf().unset("spark.sql.datetime.java8API.enabled");
    }
  }

  private static long parquetFiles(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".parquet")).count();
    }
  }
}
