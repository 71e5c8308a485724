package io.memwire.shuffle.migration;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.writer.MapOutputPublisher;
import org.apache.spark.MapOutputTracker;
import org.apache.spark.MapOutputTrackerWorker;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleIndexBlockId;
import org.apache.spark.storage.StorageLevel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * Gives a map output that Spark migrated to this executor its Memwire pointer back. It publishes
 * the output as a map task's would be (to the node's shuffle service in service mode, else in this
 * executor's directory), then reports the output's location again, now carrying the pointer, the
 * way Spark has just reported it without one: the driver's map output tracker replaces the location
 * of that map id, so reducers read the output one-sided where it now lives.
 *
 * <p>Runs on the thread of Spark's block-transfer server that received the index file, after
 * Spark's own report has been answered, so the location with the pointer is the one that stays.
 */
public final class MigratedOutputs {
  private static final Logger LOG = LoggerFactory.getLogger(MigratedOutputs.class);

  private final MapOutputPublisher publisher;
  private final ShuffleCounters counters;

  public MigratedOutputs(MapOutputPublisher publisher, ShuffleCounters counters) {
    this.publisher = publisher;
    this.counters = counters;
  }

  /** Publishes one migrated output and reports its location with the pointer. */
  public void arrived(int shuffleId, long mapId, long indexBytes) {
    SparkEnv env = SparkEnv.get();
    int mapIndex = env == null ? -1 : mapIndex(env.mapOutputTracker(), shuffleId, mapId);
    if (mapIndex < 0) {
      counters.migratedNotRepointed.increment();
      LOG.warn(
          "migrated output {} of shuffle {} stays without a Memwire pointer: the driver lists "
              + "no map output with that id",
          mapId,
          shuffleId);
      return;
    }
    DirectoryPointer pointer = publisher.publishMigrated(shuffleId, mapId, mapIndex);
    if (pointer == null) {
      counters.migratedNotRepointed.increment(); // the publisher said why
      return;
    }
    BlockManager blockManager = env.blockManager();
    BlockManagerId location =
        MapOutputPublisher.withPointer(blockManager.blockManagerId(), pointer);
    blockManager
        .master()
        .updateBlockInfo(
            location,
            new ShuffleIndexBlockId(shuffleId, mapId, IndexShuffleBlockResolver.NOOP_REDUCE_ID()),
            StorageLevel.DISK_ONLY(),
            0L,
            indexBytes);
    counters.outputsMigrated.increment();
    LOG.debug(
        "migrated output {} of shuffle {} (map index {}) re-pointed", mapId, shuffleId, mapIndex);
  }

  /** The map index of {@code mapId}, from the statuses this executor has, or -1. */
  static int mapIndex(MapOutputTracker tracker, int shuffleId, long mapId) {
    if (!(tracker instanceof MapOutputTrackerWorker worker)) {
      return -1;
    }
    Option<MapStatus[]> cached = worker.mapStatuses().get(shuffleId);
    if (cached.isEmpty() || indexIn(cached.get(), mapId) < 0) {
      // Fetches the shuffle's statuses from the driver into the cache; an empty range reads none.
      worker.getMapSizesByExecutorId(shuffleId, 0, 0, 0, 0);
      cached = worker.mapStatuses().get(shuffleId);
    }
    return cached.isEmpty() ? -1 : indexIn(cached.get(), mapId);
  }

  private static int indexIn(MapStatus[] statuses, long mapId) {
    for (int i = 0; i < statuses.length; i++) {
      if (statuses[i] != null && statuses[i].mapId() == mapId) {
        return i;
      }
    }
    return -1;
  }
}
