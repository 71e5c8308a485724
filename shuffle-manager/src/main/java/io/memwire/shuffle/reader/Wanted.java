package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.DirectorySlot;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One requested block and, once known, where its bytes are. {@link #done} makes its end (delivered,
 * failed or handed to Spark's client) happen exactly once, whichever thread gets there first.
 */
final class Wanted {
  final String id;
  final long mapId;
  final RdmaBlockStoreClient.Route route;
  final int start;
  final int end;
  final boolean batch;
  final AtomicBoolean done = new AtomicBoolean();

  /** Set by the location stage before any index or data read of this block is posted. */
  DirectorySlot slot;

  long offset;
  long length;

  Wanted(
      String id, long mapId, RdmaBlockStoreClient.Route route, int start, int end, boolean batch) {
    this.id = id;
    this.mapId = mapId;
    this.route = route;
    this.start = start;
    this.end = end;
    this.batch = batch;
  }

  ReadContext.SlotKey slotKey() {
    return new ReadContext.SlotKey(route.pointer(), route.mapIndex());
  }
}
