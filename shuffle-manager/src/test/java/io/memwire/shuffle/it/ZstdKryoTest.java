package io.memwire.shuffle.it;

import java.util.Map;

/** zstd and Kryo (relocatable: SQL and RDD shuffles may fetch in batches). */
class ZstdKryoTest extends DifferentialTestBase {
  @Override
  Map<String, String> variant() {
    return Map.of(
        "spark.io.compression.codec",
        "zstd",
        "spark.serializer",
        "org.apache.spark.serializer.KryoSerializer");
  }
}
