package io.memwire.shuffle.it;

import java.util.Map;

/**
 * Compression off, I/O encryption on (Spark then never fetches in batches), and read batches far
 * smaller than the large records' blocks, with wire reads split at 16 KiB, and no index cache
 * (every fetch reads its blocks' index entries); requests above 1 MiB (the large records') are
 * fetched to Spark's temp files (encrypted), read one-sided in 64 KiB pieces.
 */
class UncompressedEncryptedSmallBatchTest extends DifferentialTestBase {
  @Override
  Map<String, String> variant() {
    return Map.of(
        "spark.shuffle.compress", "false",
        "spark.shuffle.spill.compress", "false",
        "spark.io.encryption.enabled", "true",
        "spark.shuffle.rdma.readBatchBytes", "64k",
        "spark.shuffle.rdma.readBatchBlocks", "3",
        "spark.shuffle.rdma.maxTransferSize", "16k",
        "spark.shuffle.rdma.indexCacheSize", "0",
        "spark.network.maxRemoteBlockSizeFetchToMem", "1m");
  }

  @Override
  boolean expectBatchFetch() {
    return false;
  }

  @Override
  boolean expectBlocksToDisk() {
    return true;
  }

  @Override
  boolean expectIndexCache() {
    return false;
  }
}
