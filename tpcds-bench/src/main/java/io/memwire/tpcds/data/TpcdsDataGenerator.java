package io.memwire.tpcds.data;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.memwire.localcluster.SparkKeys;
import io.trino.tpcds.Table;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Generates the 24 TPC-DS tables as Parquet with Spark tasks (one task per {@link Chunk}) and
 * caches them on disk by scale factor: {@code <dataDir>/sf<scale>/<table>/}. A directory is used
 * only when its marker file, written last, is present; generation writes into a temporary sibling
 * and renames it. The data directory must be visible at the same path to the driver and every
 * executor.
 */
public final class TpcdsDataGenerator {
  /** Marker written after every table was generated and counted. */
  public static final String MARKER = "_memwire_tpcds.json";

  /**
   * Version of the table layout, kept in the marker: a data set written with another version (1:
   * the generator's column names) is generated again rather than read with columns missing.
   */
  static final int SCHEMA_VERSION = 2;

  private static final Logger LOG = LoggerFactory.getLogger(TpcdsDataGenerator.class);

  /**
   * Tables written concurrently: keeps every executor busy while small tables run as single tasks.
   */
  private static final int CONCURRENT_TABLES = 3;

  private final SparkSession spark;
  private final ChunkPlanner planner;
  private final Consumer<String> progress;

  /** A generator that runs on {@code spark} and reports each finished table to {@code progress}. */
  public TpcdsDataGenerator(SparkSession spark, ChunkPlanner planner, Consumer<String> progress) {
    this.spark = spark;
    this.planner = planner;
    this.progress = progress;
  }

  /**
   * The directory that holds (or will hold) the data set for {@code scale} under {@code dataDir}.
   */
  public static Path dataSetDir(Path dataDir, double scale) {
    if (!(scale > 0)) {
      throw new IllegalArgumentException("scale must be positive, got " + scale);
    }
    return dataDir.toAbsolutePath().resolve("sf" + scaleText(scale));
  }

  /** A scale factor as paths and reports write it: 1, 0.01, 10. */
  public static String scaleText(double scale) {
    return BigDecimal.valueOf(scale).stripTrailingZeros().toPlainString();
  }

  /** Reuses the cached data set for {@code scale} if complete, otherwise generates it. */
  public DataSetInfo generateOrReuse(Path dataDir, double scale) {
    long start = System.nanoTime();
    Path target = dataSetDir(dataDir, scale);
    Path marker = target.resolve(MARKER);
    if (Files.isRegularFile(marker)) {
      int version = schemaVersion(marker);
      if (version == SCHEMA_VERSION) {
        Map<String, Long> counts = readMarker(marker);
        LOG.info("Reusing TPC-DS data at scale {} from {}", scale, target);
        return new DataSetInfo(scale, target.toString(), false, counts, seconds(start));
      }
      LOG.info(
          "TPC-DS data in {} has table layout {}, this version writes {}: generating it again",
          target,
          version,
          SCHEMA_VERSION);
      progress.accept("data set " + target + " has an older table layout: generating it again");
    }
    Path partial = target.resolveSibling(target.getFileName() + ".partial");
    deleteRecursively(partial);
    deleteRecursively(target); // an incomplete earlier attempt (no marker)
    LOG.info("Generating TPC-DS data at scale {} into {}", scale, target);
    Map<String, Long> counts = generateAll(partial, scale, start);
    writeMarker(partial.resolve(MARKER), scale, counts);
    try {
      Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot rename " + partial + " to " + target, e);
    }
    return new DataSetInfo(scale, target.toString(), true, counts, seconds(start));
  }

  /** Writes every table under {@code dir}; returns the row count of each, in generator order. */
  Map<String, Long> generateAll(Path dir, double scale, long start) {
    List<Table> tables = new ArrayList<>(TpcdsSchema.tables());
    // Biggest first, so the long fact tables overlap with the many small ones.
    tables.sort(Comparator.comparingLong((Table t) -> -planner.plan(t, scale).size()));
    ExecutorService pool =
        Executors.newFixedThreadPool(
            CONCURRENT_TABLES,
            r -> {
              Thread t = new Thread(r, "tpcds-generate");
              t.setDaemon(true);
              return t;
            });
    try {
      Map<Table, Future<Long>> futures = new LinkedHashMap<>();
      for (Table table : tables) {
        futures.put(
            table,
            pool.submit(
                () -> {
                  long rows = writeTable(table, scale, dir.resolve(table.getName()));
                  progress.accept(
                      String.format(
                          "generated %-22s %,12d rows  (%.0f s)",
                          table.getName(), rows, seconds(start)));
                  return rows;
                }));
      }
      Map<String, Long> counts = new LinkedHashMap<>();
      for (Table table : TpcdsSchema.tables()) {
        counts.put(table.getName(), futures.get(table).get());
      }
      return counts;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while generating TPC-DS data", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(
          "Generating TPC-DS data failed: " + e.getCause(), e.getCause());
    } finally {
      pool.shutdownNow();
    }
  }

  /** Whether the session's rows carry DATE values as {@code java.time.LocalDate}. */
  static boolean localDates(SparkSession spark) {
    return Boolean.parseBoolean(spark.conf().get(SparkKeys.SQL_DATETIME_JAVA8_API, "false"));
  }

  /**
   * Writes one table as Parquet, one file per chunk, and returns its row count read back from the
   * files.
   */
  public long writeTable(Table table, double scale, Path dir) {
    List<Chunk> chunks = planner.plan(table, scale);
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    boolean localDates = localDates(spark);
    JavaRDD<Row> rows =
        jsc.parallelize(chunks, Math.max(1, chunks.size()))
            .flatMap(chunk -> ChunkGenerator.rows(chunk, localDates));
    jsc.setJobDescription("generate " + table.getName());
    spark
        .createDataFrame(rows, TpcdsSchema.structType(table))
        .write()
        .mode(SaveMode.Overwrite)
        .parquet(dir.toString());
    return spark.read().parquet(dir.toString()).count();
  }

  /**
   * Registers every table of the data set in {@code dataSetDir} as a temporary view named after it.
   */
  public static void registerTables(SparkSession spark, Path dataSetDir) {
    for (Table table : TpcdsSchema.tables()) {
      Path dir = dataSetDir.resolve(table.getName());
      if (!Files.isDirectory(dir)) {
        throw new IllegalStateException("Table directory missing: " + dir);
      }
      // The schema is known: no footer reads for schema inference.
      spark
          .read()
          .schema(TpcdsSchema.structType(table))
          .parquet(dir.toString())
          .createOrReplaceTempView(table.getName());
    }
  }

  private static void writeMarker(Path marker, double scale, Map<String, Long> counts) {
    Map<String, Object> content = new LinkedHashMap<>();
    content.put("scale", scale);
    content.put("schemaVersion", SCHEMA_VERSION);
    content.put("generator", "io.trino.tpcds:tpcds " + generatorVersion());
    content.put("rowCounts", counts);
    try {
      new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(marker.toFile(), content);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write " + marker, e);
    }
  }

  /** The marker's table layout version; markers written before it was recorded are version 1. */
  static int schemaVersion(Path marker) {
    try {
      Object v = new ObjectMapper().readValue(marker.toFile(), Map.class).get("schemaVersion");
      return v instanceof Number n ? n.intValue() : 1;
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException(
          "Unreadable data set marker " + marker + ": delete its directory to regenerate", e);
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Long> readMarker(Path marker) {
    try {
      Map<String, Object> content = new ObjectMapper().readValue(marker.toFile(), Map.class);
      Map<String, Long> counts = new LinkedHashMap<>();
      ((Map<String, Number>) content.get("rowCounts"))
          .forEach((k, v) -> counts.put(k, v.longValue()));
      return counts;
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException(
          "Unreadable data set marker " + marker + ": delete its directory to regenerate", e);
    }
  }

  private static String generatorVersion() {
    String v = Table.class.getPackage().getImplementationVersion();
    return v == null ? "(unknown version)" : v;
  }

  private static double seconds(long startNanos) {
    return (System.nanoTime() - startNanos) / 1e9;
  }

  private static void deleteRecursively(Path path) {
    if (!Files.exists(path)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(path)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot delete " + path, e);
    }
  }
}
