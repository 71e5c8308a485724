package io.memwire.tpcds.data;

import io.trino.tpcds.Session;
import io.trino.tpcds.Table;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * Splits a table into row ranges for parallel generation. The generator's own chunking ({@code
 * Session.withParallelism}) leaves tables under a million generator rows in one chunk, which at
 * small scale factors includes store_sales, catalog_sales and customer; this planner splits by cost
 * instead. Tables that keep history (slowly changing dimensions) are never split.
 */
public final class ChunkPlanner {
  /**
   * Default generation cost per chunk: roughly half a million output rows, a few seconds of one
   * core.
   */
  public static final long DEFAULT_COST_PER_CHUNK = 500_000;

  /**
   * Tables whose generator row is an order of about 12 line items (the returns tables replay their
   * parent).
   */
  private static final Set<Table> PER_ORDER_TABLES =
      EnumSet.of(
          Table.STORE_SALES,
          Table.STORE_RETURNS,
          Table.CATALOG_SALES,
          Table.CATALOG_RETURNS,
          Table.WEB_SALES,
          Table.WEB_RETURNS);

  private static final long LINE_ITEMS_PER_ORDER = 12;

  private final long costPerChunk;

  /** A planner that aims at {@code costPerChunk} output rows per chunk. */
  public ChunkPlanner(long costPerChunk) {
    if (costPerChunk < 1) {
      throw new IllegalArgumentException("costPerChunk must be positive, got " + costPerChunk);
    }
    this.costPerChunk = costPerChunk;
  }

  /** Number of generator rows of {@code table} at {@code scale}. */
  public static long generatorRows(Table table, double scale) {
    return Session.getDefaultSession().withScale(scale).getScaling().getRowCount(table);
  }

  /**
   * Contiguous chunks covering all generator rows of {@code table}; empty when the table has none.
   */
  public List<Chunk> plan(Table table, double scale) {
    long rows = generatorRows(table, scale);
    List<Chunk> chunks = new ArrayList<>();
    if (rows == 0) {
      return chunks;
    }
    if (table.keepsHistory()) {
      // Slowly changing dimensions (item, store, ...) derive a row from the previous one; a range
      // starting mid-history generates different rows, so they stay whole. They are small.
      chunks.add(new Chunk(table.getName(), scale, 1, rows));
      return chunks;
    }
    long weight = PER_ORDER_TABLES.contains(table) ? LINE_ITEMS_PER_ORDER : 1;
    long rowsPerChunk = Math.max(1, costPerChunk / weight);
    long count = (rows + rowsPerChunk - 1) / rowsPerChunk;
    // Even sizes: the first (rows % count) chunks get one row more.
    long base = rows / count;
    long extra = rows % count;
    long first = 1;
    for (long i = 0; i < count; i++) {
      long size = base + (i < extra ? 1 : 0);
      chunks.add(new Chunk(table.getName(), scale, first, first + size - 1));
      first += size;
    }
    return chunks;
  }
}
