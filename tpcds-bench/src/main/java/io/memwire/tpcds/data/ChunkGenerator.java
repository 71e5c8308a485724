package io.memwire.tpcds.data;

import io.trino.tpcds.Results;
import io.trino.tpcds.Session;
import io.trino.tpcds.Table;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Row;

/**
 * Generates the rows of one {@link Chunk} lazily, as Spark rows. Runs inside Spark tasks: the
 * generator session is built where the rows are made, only the small {@link Chunk} travels.
 */
public final class ChunkGenerator {
  private ChunkGenerator() {}

  /**
   * The chunk's rows, generated while the iterator is consumed; DATE values as {@link
   * TpcdsSchema.RowConverter} says for {@code localDates}.
   */
  public static Iterator<Row> rows(Chunk chunk, boolean localDates) {
    Table table = TpcdsSchema.table(chunk.table());
    // withTable(...) generates only this table: a sales table skips its returns, a returns table
    // replays its parent's random streams to find the returned line items.
    Session session = Session.getDefaultSession().withScale(chunk.scale()).withTable(table);
    Iterator<List<List<String>>> generated =
        new Results(table, chunk.firstRow(), chunk.lastRow(), session).iterator();
    TpcdsSchema.RowConverter converter = new TpcdsSchema.RowConverter(table, localDates);
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return generated.hasNext();
      }

      @Override
      public Row next() {
        // With a single table per session each step yields exactly that table's row.
        return converter.toRow(generated.next().get(0));
      }
    };
  }
}
