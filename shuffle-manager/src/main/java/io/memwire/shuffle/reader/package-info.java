/**
 * Reduce side: a port of Spark's BlockStoreShuffleReader that hands Spark's own
 * ShuffleBlockFetcherIterator a block-store client reading blocks one-sided, with Spark's client as
 * the per-peer fallback. The read path runs in stages: RdmaBlockStoreClient (routing, fallback
 * policy, HeldRequests) -> FetchRequest (one peer) -> SlotLookup -> IndexLookup -> DataFetch or
 * ToDiskFetch.
 */
package io.memwire.shuffle.reader;
