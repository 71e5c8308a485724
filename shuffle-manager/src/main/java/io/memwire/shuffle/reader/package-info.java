/**
 * Reduce side: a port of Spark's BlockStoreShuffleReader that hands Spark's own
 * ShuffleBlockFetcherIterator a block-store client reading blocks one-sided (directory slot, 16
 * index bytes, data range), with Spark's client as the per-peer fallback.
 */
package io.memwire.shuffle.reader;
