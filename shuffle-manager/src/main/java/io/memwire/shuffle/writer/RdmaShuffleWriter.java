package io.memwire.shuffle.writer;

import java.io.IOException;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.shuffle.ShuffleWriter;
import scala.Option;
import scala.Product2;
import scala.collection.Iterator;

/**
 * One of Spark's writers (bypass, unsafe or sort), unchanged, plus one step: once {@code
 * stop(true)} returns the MapStatus the files are final, so they are registered and the status's
 * location is pointed at this executor's shuffle directory.
 */
public final class RdmaShuffleWriter<K, V> extends ShuffleWriter<K, V> {
  private final ShuffleWriter<K, V> delegate;
  private final MapOutputPublisher publisher;
  private final int shuffleId;
  private final long mapId;
  private final int mapIndex;

  public RdmaShuffleWriter(
      ShuffleWriter<K, V> delegate,
      MapOutputPublisher publisher,
      int shuffleId,
      long mapId,
      int mapIndex) {
    this.delegate = delegate;
    this.publisher = publisher;
    this.shuffleId = shuffleId;
    this.mapId = mapId;
    this.mapIndex = mapIndex;
  }

  @Override
  public void write(Iterator<Product2<K, V>> records) throws IOException {
    delegate.write(records);
  }

  @Override
  public Option<MapStatus> stop(boolean success) {
    Option<MapStatus> status = delegate.stop(success);
    if (success && status.isDefined()) {
      publisher.publish(shuffleId, mapId, mapIndex, status.get());
    }
    return status;
  }

  @Override
  public long[] getPartitionLengths() {
    return delegate.getPartitionLengths();
  }
}
