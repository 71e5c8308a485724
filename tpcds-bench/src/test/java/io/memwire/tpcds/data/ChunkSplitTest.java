package io.memwire.tpcds.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.trino.tpcds.Results;
import io.trino.tpcds.Session;
import io.trino.tpcds.Table;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Generating a table in row ranges gives exactly the rows of generating it in one piece. */
class ChunkSplitTest {
  private static final double SCALE = 0.01;

  @ParameterizedTest
  @EnumSource(
      value = Table.class,
      names = {
        "STORE_SALES",
        "STORE_RETURNS",
        "CATALOG_SALES",
        "CATALOG_RETURNS",
        "WEB_SALES",
        "WEB_RETURNS",
        "INVENTORY",
        "CUSTOMER",
        "CUSTOMER_ADDRESS"
      })
  void splitGenerationEqualsUnsplit(Table table) {
    Session session = Session.getDefaultSession().withScale(SCALE).withTable(table);
    TpcdsSchema.RowConverter converter = new TpcdsSchema.RowConverter(table, true);
    List<Row> unsplit = new ArrayList<>();
    for (List<List<String>> rows : Results.constructResults(table, session)) {
      unsplit.add(converter.toRow(rows.get(0)));
    }

    // A cost small enough for several uneven chunks per table.
    List<Chunk> chunks = new ChunkPlanner(Math.max(1, unsplit.size() / 7)).plan(table, SCALE);
    assertTrue(chunks.size() >= 5, table + " split into only " + chunks.size() + " chunks");
    assertEquals(1, chunks.get(0).firstRow());
    for (int i = 1; i < chunks.size(); i++) {
      assertEquals(
          chunks.get(i - 1).lastRow() + 1, chunks.get(i).firstRow(), "chunks are contiguous");
    }
    assertEquals(ChunkPlanner.generatorRows(table, SCALE), chunks.get(chunks.size() - 1).lastRow());

    List<Row> split = new ArrayList<>();
    for (Chunk chunk : chunks) {
      for (Iterator<Row> it = ChunkGenerator.rows(chunk, true); it.hasNext(); ) {
        split.add(it.next());
      }
    }
    assertTrue(unsplit.size() > 0);
    assertEquals(unsplit.size(), split.size(), "row count of " + table);
    for (int i = 0; i < unsplit.size(); i++) {
      assertEquals(unsplit.get(i), split.get(i), "row " + i + " of " + table);
    }
  }

  @Test
  void tablesThatKeepHistoryAreNeverSplit() {
    // item rows continue the previous row's history: a range starting mid-table would generate
    // other rows.
    for (Table table : TpcdsSchema.tables()) {
      if (table.keepsHistory()) {
        assertEquals(1, new ChunkPlanner(1).plan(table, 1).size(), table.getName());
      }
    }
  }

  @Test
  void salesTablesAreSplitAtScaleOneWhereTheGeneratorsOwnChunkingIsNot() {
    // The generator's own chunking keeps tables under a million generator rows whole; store_sales
    // has 240,000 orders at SF 1.
    assertEquals(240_000, ChunkPlanner.generatorRows(Table.STORE_SALES, 1));
    List<Chunk> chunks =
        new ChunkPlanner(ChunkPlanner.DEFAULT_COST_PER_CHUNK).plan(Table.STORE_SALES, 1);
    assertTrue(chunks.size() >= 4, "store_sales SF 1 in " + chunks.size() + " chunks");
    assertEquals(24, TpcdsSchema.tables().size());
  }
}
