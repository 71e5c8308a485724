package io.memwire.shuffle.reader;

/**
 * How one-sided data reads are batched: at most {@code batchBlocks} blocks and {@code batchBytes}
 * bytes per batch (and per piece of a block read to disk).
 */
record ReadSettings(int batchBlocks, long batchBytes) {}
