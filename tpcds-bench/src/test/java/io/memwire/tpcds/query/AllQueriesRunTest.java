package io.memwire.tpcds.query;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.tpcds.data.ChunkPlanner;
import io.memwire.tpcds.data.DataSetInfo;
import io.memwire.tpcds.data.TpcdsDataGenerator;
import io.memwire.tpcds.data.TpcdsSchema;
import io.trino.tpcds.Table;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's 103 TPC-DS query files against the generated tables, on one in-process {@code local[2]}
 * session. By default every query is analysed against empty tables of the generated schema (every
 * column the queries name resolves); with {@code -Dtpcds.allQueries=true} every query also runs on
 * generated SF 0.01 data (several minutes on a 2-core machine, so not in the default suite; {@code
 * -Dtpcds.dataDir=DIR} reuses a data set there).
 */
class AllQueriesRunTest {
  @TempDir static Path dataDir;
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    spark =
        SparkSession.builder()
            .master("local[2]")
            .appName("all-queries-test")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            // As the benchmark's --no-broadcast: broadcast hash maps of BIGINT keys outgrow a 1 GB
            // test JVM.
            .config("spark.sql.autoBroadcastJoinThreshold", "-1")
            .config("spark.sql.adaptive.autoBroadcastJoinThreshold", "-1")
            .getOrCreate();
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void everyQueryResolvesAgainstTheGeneratedSchema() {
    QueryCatalog catalog = new QueryCatalog();
    List<String> all = catalog.select("all");
    assertEquals(103, all.size(), all.toString());
    for (Table table : TpcdsSchema.tables()) {
      spark
          .createDataFrame(List.of(), TpcdsSchema.structType(table))
          .createOrReplaceTempView(table.getName());
    }
    Map<String, String> failures = new LinkedHashMap<>();
    for (String q : all) {
      try {
        spark.sql(catalog.sql(q)).queryExecution().assertAnalyzed();
      } catch (Exception e) {
        failures.put(q, String.valueOf(e).lines().findFirst().orElse(""));
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " queries do not resolve: " + failures);
  }

  @Test
  @EnabledIfSystemProperty(named = "tpcds.allQueries", matches = "true")
  @Timeout(value = 90, unit = TimeUnit.MINUTES)
  void everyQueryOfSparksSetRunsOnTheGeneratedData() {
    QueryCatalog catalog = new QueryCatalog();
    List<String> all = catalog.select("all");
    assertEquals(103, all.size(), all.toString());

    long t0 = System.nanoTime();
    DataSetInfo data =
        new TpcdsDataGenerator(
                spark, new ChunkPlanner(ChunkPlanner.DEFAULT_COST_PER_CHUNK), s -> {})
            .generateOrReuse(
                Path.of(System.getProperty("tpcds.dataDir", dataDir.toString())), 0.01);
    TpcdsDataGenerator.registerTables(spark, Path.of(data.path()));
    System.out.printf("generated SF 0.01 in %.1f s%n", (System.nanoTime() - t0) / 1e9);

    // At SF 0.01 some groups are empty: under Spark 4's ANSI default q12 (a class's revenue total)
    // and q90
    // (evening sales) divide by zero. The query text is Spark's; the data, not the schema, is too
    // small.
    spark.conf().set("spark.sql.ansi.enabled", "false");
    Map<String, String> failures = new LinkedHashMap<>();
    List<String> nonEmpty = new ArrayList<>();
    long t1 = System.nanoTime();
    for (String q : all) {
      long tq = System.nanoTime();
      try {
        int rows = spark.sql(catalog.sql(q)).collectAsList().size();
        if (rows > 0) {
          nonEmpty.add(q);
        }
        System.out.printf(
            "query %s ok: %d rows in %.1f s%n", q, rows, (System.nanoTime() - tq) / 1e9);
      } catch (Exception e) {
        failures.put(q, String.valueOf(e).lines().findFirst().orElse(""));
        System.out.printf("query %s FAILED: %s%n", q, failures.get(q));
      }
    }
    System.out.printf(
        "ran %d queries in %.1f s, %d with rows%n",
        all.size(), (System.nanoTime() - t1) / 1e9, nonEmpty.size());
    spark.conf().unset("spark.sql.ansi.enabled");
    assertTrue(failures.isEmpty(), failures.size() + " queries failed: " + failures);
    // The data must make most queries return rows, or running them proves little.
    assertTrue(
        nonEmpty.size() > 80, "only " + nonEmpty.size() + " queries returned rows: " + nonEmpty);
  }
}
