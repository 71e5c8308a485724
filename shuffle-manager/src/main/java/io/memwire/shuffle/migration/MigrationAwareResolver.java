package io.memwire.shuffle.migration;

import io.memwire.shuffle.compat.SparkCompat;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.apache.spark.SparkConf;
import org.apache.spark.network.client.StreamCallbackWithID;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleIndexBlockId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block resolver the shuffle manager gives Spark: Spark's own {@link IndexShuffleBlockResolver}
 * (a subclass, so every cast Spark makes to it holds) that also says when a map output migrated off
 * a decommissioned executor has arrived here. Spark's resolver has different constructors on
 * different lines, so the subclass is the one {@link SparkCompat#newHookedResolver} picks for the
 * running Spark; this class is its {@code putShuffleBlockAsStream}.
 *
 * <p>Spark stores a migrated output through this resolver, data file first and index file last. The
 * files are stored by the owning sort-shuffle manager's resolver, so that its record of which
 * outputs to delete with their shuffle stays the one record. Once the index file is in place and
 * Spark has reported its new location to the driver, the {@link ArrivalListener} runs, on the
 * thread of Spark's block-transfer server that received the file.
 */
public final class MigrationAwareResolver {
  private static final Logger LOG = LoggerFactory.getLogger(MigrationAwareResolver.class);

  /** Told about each migrated output once both its files are stored and reported. */
  @FunctionalInterface
  public interface ArrivalListener {
    /**
     * @param indexBytes the size of the stored index file
     */
    void arrived(int shuffleId, long mapId, long indexBytes);
  }

  private final IndexShuffleBlockResolver owner;
  private final ArrivalListener listener;

  private MigrationAwareResolver(IndexShuffleBlockResolver owner, ArrivalListener listener) {
    this.owner = owner;
    this.listener = listener;
  }

  /**
   * The resolver for Spark.
   *
   * @param owner the resolver of the sort-shuffle manager that writes this executor's outputs
   */
  public static IndexShuffleBlockResolver create(
      SparkConf conf, IndexShuffleBlockResolver owner, ArrivalListener listener) {
    return create(conf, owner, listener, (id, block) -> block);
  }

  /**
   * The resolver for Spark, passing each block Spark reads through it to {@code blockCheck} ({@link
   * io.memwire.shuffle.reader.LocalBlockCheck}).
   */
  public static IndexShuffleBlockResolver create(
      SparkConf conf,
      IndexShuffleBlockResolver owner,
      ArrivalListener listener,
      java.util.function.BiFunction<
              org.apache.spark.storage.BlockId,
              org.apache.spark.network.buffer.ManagedBuffer,
              org.apache.spark.network.buffer.ManagedBuffer>
          blockCheck) {
    MigrationAwareResolver hook = new MigrationAwareResolver(owner, listener);
    return SparkCompat.newHookedResolver(conf, hook::putShuffleBlockAsStream, blockCheck);
  }

  private StreamCallbackWithID putShuffleBlockAsStream(
      BlockId blockId, SerializerManager serializerManager) {
    StreamCallbackWithID stored = owner.putShuffleBlockAsStream(blockId, serializerManager);
    if (!(blockId instanceof ShuffleIndexBlockId index)) {
      return stored;
    }
    return new StreamCallbackWithID() {
      @Override
      public String getID() {
        return stored.getID();
      }

      @Override
      public ByteBuffer getCompletionResponse() {
        return stored.getCompletionResponse();
      }

      @Override
      public void onData(String streamId, ByteBuffer buf) throws IOException {
        stored.onData(streamId, buf);
      }

      @Override
      public void onComplete(String streamId) throws IOException {
        stored.onComplete(streamId);
        long indexBytes =
            owner.getIndexFile(index.shuffleId(), index.mapId(), scala.Option.empty()).length();
        try {
          listener.arrived(index.shuffleId(), index.mapId(), indexBytes);
        } catch (RuntimeException e) {
          // The output is stored and Spark knows where: only its pointer is missing.
          LOG.warn(
              "migrated output {} of shuffle {} stays without a Memwire pointer: {}",
              index.mapId(),
              index.shuffleId(),
              e.toString());
        }
      }

      @Override
      public void onFailure(String streamId, Throwable cause) throws IOException {
        stored.onFailure(streamId, cause);
      }
    };
  }
}
