package io.memwire.shuffle.it;

import java.util.Map;

/** lz4 (Spark's default codec), Java serializer, and the >2000-partition job. */
class Lz4JavaSerializerTest extends DifferentialTestBase {
  @Override
  Map<String, String> variant() {
    return Map.of(
        "spark.io.compression.codec",
        "lz4",
        "spark.serializer",
        "org.apache.spark.serializer.JavaSerializer");
  }

  @Override
  boolean large() {
    return true;
  }
}
