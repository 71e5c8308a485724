package io.memwire.shuffle.reader;

import java.util.List;

/**
 * Where the bytes of located blocks are read from: one-sided into memory ({@link DataFetch}) or
 * into Spark's temp files ({@link ToDiskFetch}). Every block given ends exactly once through the
 * request's {@link BlockEnds}: delivered, failed, or, when its read fails, leaving the one-sided
 * path (where it goes is decided by the request's {@link FetchRun}).
 */
interface BlockSource {
  /** Starts reading {@code blocks}, in order; returns without waiting for the reads. */
  void read(List<LocatedBlock> blocks);
}
