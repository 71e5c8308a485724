package io.memwire.flight;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;

/** Where an {@link RdmaFlightStream} gets its batches: gRPC DoGet or the RDMA exchange. */
interface StreamSource extends AutoCloseable {
  /** Blocks until the stream is known to work (first batch pulled, end, or an error thrown). */
  void settle();

  Schema schema();

  VectorSchemaRoot root();

  DictionaryProvider dictionaries();

  boolean next();

  ArrowBuf latestMetadata();

  void cancel(String message, Throwable cause);

  @Override
  void close();
}
