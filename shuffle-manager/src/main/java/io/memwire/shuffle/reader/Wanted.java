package io.memwire.shuffle.reader;

/**
 * One block Spark asked for, as parsed from its id: its map output ({@code mapId} and {@code
 * route}) and its reduce partitions {@code [start, end)} ({@code batch}: several, as one contiguous
 * block). Where its bytes are is learned by the stages ({@link LocatedBlock}), and whether it has
 * ended is kept, by identity, by its request's {@link BlockEnds}.
 */
record Wanted(String id, long mapId, Route route, int start, int end, boolean batch) {
  /** The same block, read from the chunk that replaced its route's. */
  Wanted movedTo(io.memwire.shuffle.directory.DirectoryPointer now) {
    return new Wanted(id, mapId, route.movedTo(now), start, end, batch);
  }
}
