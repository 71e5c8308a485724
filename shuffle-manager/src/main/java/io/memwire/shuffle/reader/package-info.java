/**
 * Reduce side: a port of Spark's BlockStoreShuffleReader that hands Spark's own
 * ShuffleBlockFetcherIterator a block-store client reading blocks one-sided, with Spark's client as
 * the per-peer fallback. Per fetch request (one peer): FetchPlanner decides once (FetchPlan:
 * one-sided to memory or to disk, or Spark's path); FetchRun carries the plan out, with the one
 * fallback decision (FetchRun.leave) and the one re-resolve point; FetchRequest composes the stages
 * SlotLookup -> IndexLookup -> BlockSource (DataFetch or ToDiskFetch); every block ends once
 * through BlockEnds. ReadServices is what an executor's tasks share. Value records (Route, Wanted,
 * MapBlocks, LocatedBlock, Miss, Found, FetchPlan) sit at the bottom: references inside the package
 * point one way (ReaderLayeringTest).
 */
package io.memwire.shuffle.reader;
