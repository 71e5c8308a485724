package io.memwire.shuffle.compat.spark35;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import org.apache.spark.SparkConf;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.client.StreamCallbackWithID;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockId;
import scala.Option;

/**
 * Spark's {@link IndexShuffleBlockResolver} built through the only constructor Spark 3.5.2 and
 * later 3.5 releases have, {@code (SparkConf, BlockManager, java.util.Map)}, whose {@link
 * #putShuffleBlockAsStream} is answered by a hook (the shuffle manager's migration-aware store) and
 * whose {@link #getBlockData} passes what Spark's resolver found through a check (the blocks Spark
 * reads itself: local reads, its own transfer).
 */
public final class ResolverWithTaskIdMap extends IndexShuffleBlockResolver {
  private final BiFunction<BlockId, SerializerManager, StreamCallbackWithID> putStream;
  private final BiFunction<BlockId, ManagedBuffer, ManagedBuffer> blockCheck;

  /**
   * @param putStream stores a block migrated here; called for every {@link
   *     #putShuffleBlockAsStream}
   * @param blockCheck returns the block Spark's resolver found, or throws when it is corrupt
   */
  public ResolverWithTaskIdMap(
      SparkConf conf,
      BiFunction<BlockId, SerializerManager, StreamCallbackWithID> putStream,
      BiFunction<BlockId, ManagedBuffer, ManagedBuffer> blockCheck) {
    // The block manager is looked up in SparkEnv on first use, as Spark's own default does.
    super(conf, null, new ConcurrentHashMap<>());
    this.putStream = putStream;
    this.blockCheck = blockCheck;
  }

  @Override
  public StreamCallbackWithID putShuffleBlockAsStream(
      BlockId blockId, SerializerManager serializerManager) {
    return putStream.apply(blockId, serializerManager);
  }

  @Override
  public ManagedBuffer getBlockData(BlockId blockId, Option<String[]> dirs) {
    return blockCheck.apply(blockId, super.getBlockData(blockId, dirs));
  }
}
