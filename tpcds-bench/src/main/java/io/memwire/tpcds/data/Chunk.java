package io.memwire.tpcds.data;

import java.io.Serializable;

/**
 * One generator task: rows {@code firstRow..lastRow} (1-based, inclusive, in the generator's own
 * row numbering, which counts orders for the sales and returns tables) of one table at one scale
 * factor.
 */
public record Chunk(String table, double scale, long firstRow, long lastRow)
    implements Serializable {
  /** Checks the range. */
  public Chunk {
    if (firstRow < 1 || lastRow < firstRow) {
      throw new IllegalArgumentException(
          "Bad row range " + firstRow + ".." + lastRow + " for " + table);
    }
  }
}
