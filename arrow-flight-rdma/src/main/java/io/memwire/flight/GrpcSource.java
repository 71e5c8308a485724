package io.memwire.flight;

import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;

/** Plain DoGet: the FlightStream as is. */
final class GrpcSource implements StreamSource {
  private final FlightStream stream;

  GrpcSource(FlightStream stream) {
    this.stream = stream;
  }

  @Override
  public void settle() {}

  @Override
  public Schema schema() {
    return stream.getSchema();
  }

  @Override
  public VectorSchemaRoot root() {
    return stream.getRoot();
  }

  @Override
  public DictionaryProvider dictionaries() {
    return stream.getDictionaryProvider();
  }

  @Override
  public boolean next() {
    return stream.next();
  }

  @Override
  public ArrowBuf latestMetadata() {
    return stream.getLatestMetadata();
  }

  @Override
  public void cancel(String message, Throwable cause) {
    stream.cancel(message, cause);
  }

  @Override
  public void close() {
    try {
      stream.close();
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("closing the DoGet stream failed", e);
    }
  }
}
