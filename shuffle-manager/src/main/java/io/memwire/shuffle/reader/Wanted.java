package io.memwire.shuffle.reader;

/**
 * One block Spark asked for, as parsed from its id: its map output ({@code mapId} and {@link
 * #route}) and its reduce partitions {@code [start, end)} ({@code batch}: several, as one
 * contiguous block). Immutable; where its bytes are is learned by the stages ({@link
 * LocatedBlock}), and whether it has ended is kept by its request's {@link BlockEnds}.
 */
final class Wanted {
  final String id;
  final long mapId;
  final RdmaBlockStoreClient.Route route;
  final int start;
  final int end;
  final boolean batch;

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
