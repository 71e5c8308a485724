package io.memwire.shuffle.compat;

import java.util.function.BiFunction;
import org.apache.spark.SparkConf;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.client.StreamCallbackWithID;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManager;
import scala.Option;

/**
 * Spark's {@link IndexShuffleBlockResolver} through the constructors Spark 4 has, with {@code
 * putShuffleBlockAsStream} answered by a hook and {@code getBlockData} passed through a check. The
 * 3.5.2+ variant, whose constructor Spark 4 lacks, is {@code
 * io.memwire.shuffle.compat.spark35.ResolverWithTaskIdMap} (module shuffle-manager-spark35).
 */
final class HookedResolvers {
  private HookedResolvers() {}

  /** {@code (SparkConf)}: every Spark 4 release. */
  static final class OnConf extends IndexShuffleBlockResolver {
    private final BiFunction<BlockId, SerializerManager, StreamCallbackWithID> putStream;
    private final BiFunction<BlockId, ManagedBuffer, ManagedBuffer> blockCheck;

    OnConf(
        SparkConf conf,
        BiFunction<BlockId, SerializerManager, StreamCallbackWithID> hook,
        BiFunction<BlockId, ManagedBuffer, ManagedBuffer> blockCheck) {
      super(conf);
      this.putStream = hook;
      this.blockCheck = blockCheck;
    }

    @Override
    public StreamCallbackWithID putShuffleBlockAsStream(BlockId id, SerializerManager sm) {
      return putStream.apply(id, sm);
    }

    @Override
    public ManagedBuffer getBlockData(BlockId blockId, Option<String[]> dirs) {
      return blockCheck.apply(blockId, super.getBlockData(blockId, dirs));
    }
  }

  /** {@code (SparkConf, BlockManager)}: Spark 3.5.0 and 3.5.1 (and 4.x). */
  static final class OnConfAndBlockManager extends IndexShuffleBlockResolver {
    private final BiFunction<BlockId, SerializerManager, StreamCallbackWithID> putStream;
    private final BiFunction<BlockId, ManagedBuffer, ManagedBuffer> blockCheck;

    OnConfAndBlockManager(
        SparkConf conf,
        BiFunction<BlockId, SerializerManager, StreamCallbackWithID> hook,
        BiFunction<BlockId, ManagedBuffer, ManagedBuffer> blockCheck) {
      // null: the block manager is looked up in SparkEnv on first use, as Spark's default does.
      super(conf, (BlockManager) null);
      this.putStream = hook;
      this.blockCheck = blockCheck;
    }

    @Override
    public StreamCallbackWithID putShuffleBlockAsStream(BlockId id, SerializerManager sm) {
      return putStream.apply(id, sm);
    }

    @Override
    public ManagedBuffer getBlockData(BlockId blockId, Option<String[]> dirs) {
      return blockCheck.apply(blockId, super.getBlockData(blockId, dirs));
    }
  }
}
