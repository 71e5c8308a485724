package io.memwire.shuffle.it;

import java.util.Map;

/**
 * Compression off, I/O encryption on (Spark then never fetches in batches), and read batches far
 * smaller than the large records' blocks, with wire reads split at 16 KiB, and no index cache
 * (every fetch reads its blocks' index entries).
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
        "spark.shuffle.rdma.indexCacheSize", "0");
  }

  @Override
  boolean expectBatchFetch() {
    return false;
  }

  @Override
  boolean expectIndexCache() {
    return false;
  }
}
