package io.memwire.shuffle;

import io.memwire.transfer.MemoryRegion;
import java.io.File;
import java.io.IOException;
import org.apache.spark.MapOutputTrackerWorker;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import scala.Option;

/**
 * Makes this executor's directory slots of a shuffle stale, as a rerun of each of its map tasks
 * would: every output the executor holds is published again in its slot under a map id no task has
 * (-1), while the driver's map statuses keep the old ids. Reducers must then find the mismatch,
 * fail the blocks and have Spark rerun the map stage. Runs inside an executor's task; uses only the
 * manager's running parts (the directory's own {@code publish}), no hook of the main code.
 */
public final class StaleSlots {
  /** A map id no task attempt has. */
  static final long NO_TASK = -1L;

  private StaleSlots() {}

  /**
   * Republishes under {@link #NO_TASK} every output of {@code shuffleId} this executor holds, and
   * forgets what its reducers cached of the shuffle (so they read the slots again). Idempotent.
   *
   * @return slots made stale (0 where no transport runs)
   */
  public static int onThisExecutor(int shuffleId) throws IOException {
    RdmaShuffleManager m = RdmaShuffleManager.current();
    ManagerTransport t = m == null ? null : m.lifecycle.running();
    if (t == null) {
      return 0;
    }
    t.readContext.forget(shuffleId);
    SparkEnv env = SparkEnv.get();
    MapOutputTrackerWorker tracker = (MapOutputTrackerWorker) env.mapOutputTracker();
    tracker.getMapSizesByExecutorId(shuffleId, 0, 0, 0, 0); // the driver's statuses, cached here
    Option<MapStatus[]> statuses = tracker.mapStatuses().get(shuffleId);
    if (statuses.isEmpty()) {
      return 0;
    }
    IndexShuffleBlockResolver files = (IndexShuffleBlockResolver) m.shuffleBlockResolver();
    String me = env.executorId();
    int n = 0;
    MapStatus[] all = statuses.get();
    for (int mapIndex = 0; mapIndex < all.length; mapIndex++) {
      MapStatus s = all[mapIndex];
      if (s == null || !me.equals(s.location().executorId())) {
        continue;
      }
      File index = files.getIndexFile(shuffleId, s.mapId(), Option.empty());
      File data = files.getDataFile(shuffleId, s.mapId());
      MemoryRegion indexRegion =
          t.node.register(index.toPath(), 0, index.length(), t.publisher.outputs());
      MemoryRegion dataRegion =
          data.length() == 0
              ? null
              : t.node.register(data.toPath(), 0, data.length(), t.publisher.outputs());
      t.directory.publish(shuffleId, mapIndex, NO_TASK, indexRegion, dataRegion);
      n++;
    }
    return n;
  }
}
