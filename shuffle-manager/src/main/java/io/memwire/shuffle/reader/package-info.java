/**
 * Reduce side: a port of Spark's BlockStoreShuffleReader that hands Spark's own
 * ShuffleBlockFetcherIterator a block-store client reading blocks one-sided, with Spark's client as
 * the per-peer fallback. The read path runs in stages, composed in FetchRequest (one peer):
 * RdmaBlockStoreClient (routing, HeldRequests) -> FetchRequest: SlotLookup -> IndexLookup ->
 * BlockSource (DataFetch or ToDiskFetch); every block ends once through BlockEnds, whose one
 * fallback point is SparkFallback (Spark's client, or FetchFailed when fallback is off).
 */
package io.memwire.shuffle.reader;
