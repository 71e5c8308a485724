package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.ChunkLayout;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.TestSlots;
import io.memwire.transfer.InMemoryTransport;
import io.memwire.transfer.InMemoryTransport.Action;
import io.memwire.transfer.InMemoryTransport.PostedRead;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferNode;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.network.shuffle.DownloadFile;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.apache.spark.network.shuffle.SimpleDownloadFile;
import org.apache.spark.network.util.MapConfigProvider;
import org.apache.spark.network.util.TransportConf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reduce-side read path ({@link RdmaBlockStoreClient}) on the in-memory provider: a "map" node
 * serves a directory chunk, index files and data files as registered memory, as the shuffle
 * manager's writer side lays them out; the reader runs unchanged, without Spark or sockets.
 */
class InMemoryReadPathTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int SHUFFLE = 7;
  private static final int MAPS = 2;

  /** Block sizes per map output and reduce partition. */
  private static final int[][] SIZES = {{1000, 3000, 20000, 700}, {4096, 1, 5000, 12345}};

  @TempDir Path tmp;

  private InMemoryTransport transport;
  private TransferNode mapNode;
  private TransferNode reduceNode;
  private ByteBuffer chunk;
  private final List<MemoryRegion> indexRegions = new ArrayList<>();
  private final List<ByteBuffer> indexFiles = new ArrayList<>();
  private final List<MemoryRegion> dataRegions = new ArrayList<>();
  private final List<long[]> offsets = new ArrayList<>();
  private final List<byte[]> data = new ArrayList<>();
  private final Map<Long, Route> routes = new HashMap<>();
  private DirectoryPointer pointer;
  private final ShuffleCounters counters = new ShuffleCounters();
  private ReadServices ctx;
  private final RecordingSpark spark = new RecordingSpark();

  @BeforeEach
  void setUp() {
    transport = new InMemoryTransport();
    mapNode = transport.start();
    reduceNode = transport.start();
    chunk = ByteBuffer.allocateDirect(MAPS * DirectorySlot.SIZE);
    MemoryRegion chunkRegion = TestRegions.register(mapNode, chunk);
    pointer = new DirectoryPointer(0, chunkRegion.remote());
    for (int m = 0; m < MAPS; m++) {
      long[] off = new long[SIZES[m].length + 1];
      for (int r = 0; r < SIZES[m].length; r++) {
        off[r + 1] = off[r] + SIZES[m][r];
      }
      byte[] bytes = new byte[(int) off[off.length - 1]];
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] = (byte) (i * 7 + m * 101 + 3);
      }
      ByteBuffer d = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
      ByteBuffer idx = ByteBuffer.allocateDirect(off.length * 8);
      for (long o : off) {
        idx.putLong(o);
      }
      idx.flip();
      dataRegions.add(TestRegions.register(mapNode, d));
      indexRegions.add(TestRegions.register(mapNode, idx));
      indexFiles.add(idx);
      offsets.add(off);
      data.add(bytes);
      writeSlot(m, mapId(m));
      routes.put(mapId(m), new Route(pointer, m));
    }
    ctx = newContext(1 << 20);
  }

  private ReadServices newContext(long readBatchBytes) {
    return new ReadServices(reduceNode, 8, readBatchBytes, true, 1 << 20, counters);
  }

  @AfterEach
  void tearDown() {
    ctx.close();
    reduceNode.close();
    mapNode.close();
    assertEquals(0, reduceNode.stats().poolBuffersOutstanding(), "read buffers not returned");
    transport.close();
  }

  private static long mapId(int m) {
    return 100L + m;
  }

  /** Writes map index {@code m}'s slot, naming {@code mapId} (another id makes it stale). */
  private void writeSlot(int m, long mapId) {
    TestSlots.write(
        new DirectorySlot(m, mapId, indexRegions.get(m).remote(), dataRegions.get(m).remote()),
        chunk,
        m * DirectorySlot.SIZE);
  }

  private static String block(int m, int r) {
    return "shuffle_" + SHUFFLE + "_" + mapId(m) + "_" + r;
  }

  private byte[] expected(int m, int from, int to) {
    long[] off = offsets.get(m);
    byte[] out = new byte[(int) (off[to] - off[from])];
    System.arraycopy(data.get(m), (int) off[from], out, 0, out.length);
    return out;
  }

  private RdmaBlockStoreClient task() {
    return new RdmaBlockStoreClient(ctx, SHUFFLE, routes, spark);
  }

  private void fetch(RdmaBlockStoreClient client, DownloadFileManager toDisk, String... ids) {
    client.fetchBlocks("map-host", 7337, "exec-1", ids, spark.listener, toDisk);
  }

  private boolean isIndexRead(PostedRead r, int m) {
    return r.remoteKey() == indexRegions.get(m).remote().segments().get(0).key();
  }

  private boolean isDataRead(PostedRead r, int m) {
    return r.remoteKey() == dataRegions.get(m).remote().segments().get(0).key();
  }

  private boolean isSlotRead(PostedRead r, int m) {
    return r.remoteKey() == pointer.region().segments().get(0).key()
        && r.offsetInSegment() == (long) m * DirectorySlot.SIZE;
  }

  @Test
  void readsBlocksOneSidedAndLaterTasksInOneRoundTrip() {
    fetch(
        task(),
        null,
        block(0, 0),
        block(0, 2),
        block(1, 3),
        "shuffle_" + SHUFFLE + "_" + mapId(1) + "_1_3");
    spark.awaitEnded(4);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertArrayEquals(expected(0, 2, 3), spark.ok.get(block(0, 2)));
    assertArrayEquals(expected(1, 3, 4), spark.ok.get(block(1, 3)));
    assertArrayEquals(
        expected(1, 1, 3), spark.ok.get("shuffle_" + SHUFFLE + "_" + mapId(1) + "_1_3"));
    assertEquals(2, counters.slotReads.sum());
    assertEquals(2, counters.indexReads.sum(), "whole indexes read and kept");
    assertEquals(2, counters.metadataReads.sum(), "slots, then indexes: two round trips");
    assertEquals(0, counters.fallbackBlocks.sum());

    // A later task of this executor knows slots and indexes: only data is read.
    long before = transport.posted();
    fetch(task(), null, block(0, 1), block(1, 0));
    spark.awaitEnded(6);
    assertArrayEquals(expected(0, 1, 2), spark.ok.get(block(0, 1)));
    assertArrayEquals(expected(1, 0, 1), spark.ok.get(block(1, 0)));
    assertEquals(2, transport.posted() - before, "one data read per block, nothing else");
    assertEquals(2, counters.slotReads.sum());
    assertEquals(2, counters.metadataReads.sum());
  }

  /**
   * Replaces the directory by one whose slots carry their index entries inline (as the writer lays
   * it out for a shuffle of few partitions); the routes point at it.
   */
  private void inlineDirectory() {
    int entries = SIZES[0].length + 1;
    chunk = ByteBuffer.allocateDirect(MAPS * ChunkLayout.stride(entries));
    pointer = new DirectoryPointer(0, entries, TestRegions.register(mapNode, chunk).remote());
    for (int m = 0; m < MAPS; m++) {
      writeInlineSlot(m, mapId(m));
      routes.put(mapId(m), new Route(pointer, m));
    }
  }

  private void writeInlineSlot(int m, long mapId) {
    TestSlots.write(
        new DirectorySlot(
            m, mapId, indexRegions.get(m).remote(), dataRegions.get(m).remote(), offsets.get(m)),
        chunk,
        m * ChunkLayout.stride(pointer.entries()));
  }

  private boolean isAnyIndexRead(PostedRead r) {
    for (int m = 0; m < MAPS; m++) {
      if (isIndexRead(r, m)) {
        return true;
      }
    }
    return false;
  }

  @Test
  void inlineEntriesMakeTheFirstReadOneMetadataRoundTripAndLaterTasksReadOnlyData() {
    inlineDirectory();
    AtomicInteger indexFileReads = new AtomicInteger();
    transport.script(
        r -> {
          if (isAnyIndexRead(r)) {
            indexFileReads.incrementAndGet();
          }
          return Action.serve();
        });
    String batch = "shuffle_" + SHUFFLE + "_" + mapId(1) + "_1_3";
    fetch(task(), null, block(0, 0), block(0, 2), block(1, 3), batch);
    spark.awaitEnded(4);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertArrayEquals(expected(0, 2, 3), spark.ok.get(block(0, 2)));
    assertArrayEquals(expected(1, 3, 4), spark.ok.get(block(1, 3)));
    assertArrayEquals(expected(1, 1, 3), spark.ok.get(batch));
    assertEquals(1, counters.metadataReads.sum(), "slots and entries in one round trip");
    assertEquals(2, counters.slotReads.sum());
    assertEquals(2, counters.indexReads.sum(), "both indexes read whole, with their slots");
    assertEquals(0, indexFileReads.get(), "no index file read");
    assertEquals(0, counters.fallbackBlocks.sum());

    // A later task of this executor has both indexes cached: only data is read.
    long before = transport.posted();
    fetch(task(), null, block(0, 1), block(1, 0));
    spark.awaitEnded(6);
    assertArrayEquals(expected(0, 1, 2), spark.ok.get(block(0, 1)));
    assertArrayEquals(expected(1, 0, 1), spark.ok.get(block(1, 0)));
    assertEquals(2, transport.posted() - before, "one data read per block, nothing else");
    assertEquals(1, counters.metadataReads.sum());
    assertEquals(2, counters.indexCacheHits.sum());
  }

  @Test
  void withTheIndexCacheOffInlineEntriesStillComeWithTheSlot() {
    inlineDirectory();
    ctx.close();
    ctx = new ReadServices(reduceNode, 8, 1 << 20, true, 0, counters);
    fetch(task(), null, block(0, 0), block(1, 2));
    spark.awaitEnded(2);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertArrayEquals(expected(1, 2, 3), spark.ok.get(block(1, 2)));
    assertEquals(1, counters.metadataReads.sum());
    assertEquals(0, ctx.indexCacheBytes(), "nothing kept");

    // The slot is kept without its entries: the next task reads just the block's entries.
    fetch(task(), null, block(0, 3));
    spark.awaitEnded(3);
    assertArrayEquals(expected(0, 3, 4), spark.ok.get(block(0, 3)));
    assertEquals(2, counters.metadataReads.sum(), "one metadata round trip per fetch");
    assertEquals(1, counters.indexEntryReads.sum());
    assertEquals(2, counters.slotReads.sum());
  }

  @Test
  void aStaleOrTornInlineSlotIsReReadOnceThenItsBlocksFail() {
    inlineDirectory();
    writeInlineSlot(1, 999); // the executor reran map index 1 as another map id
    fetch(task(), null, block(0, 0), block(1, 0), block(1, 2));
    spark.awaitEnded(3);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    for (String id : List.of(block(1, 0), block(1, 2))) {
      Throwable e = spark.failed.get(id);
      assertInstanceOf(IOException.class, e, id);
      assertTrue(e.getMessage().contains("does not hold map output " + mapId(1)), e.getMessage());
    }
    assertEquals(2, counters.metadataReads.sum(), "the first batch and the re-read");
    assertEquals(1, counters.staleSlots.sum());

    // Torn: the right header, an entry of another output (the CRC does not match).
    writeInlineSlot(1, mapId(1));
    int entryAt = ChunkLayout.stride(pointer.entries()) + DirectorySlot.SIZE + 2 * 8;
    chunk.putLong(entryAt, chunk.getLong(entryAt) + 1);
    fetch(task(), null, block(1, 1));
    spark.awaitEnded(4);
    assertInstanceOf(IOException.class, spark.failed.get(block(1, 1)));
    assertEquals(2, counters.staleSlots.sum());

    assertEquals(Set.of(), spark.viaSpark, "a stale slot is no case for Spark's client");

    // A header-only slot in a directory with inline entries: its index file is read apart.
    TestSlots.write(
        new DirectorySlot(1, mapId(1), indexRegions.get(1).remote(), dataRegions.get(1).remote()),
        chunk,
        ChunkLayout.stride(pointer.entries()));
    long metadata = counters.metadataReads.sum();
    fetch(task(), null, block(1, 3));
    spark.awaitEnded(5);
    assertArrayEquals(expected(1, 3, 4), spark.ok.get(block(1, 3)));
    assertEquals(metadata + 2, counters.metadataReads.sum(), "the slot, then its index");
    assertEquals(2, counters.staleSlots.sum());
  }

  @Test
  void aStaleSlotIsReReadOnceThenItsBlocksFailForSparkToRerunTheMap() {
    writeSlot(1, 999); // the executor reran map index 1 as another map id
    fetch(task(), null, block(0, 0), block(1, 0), block(1, 2));
    spark.awaitEnded(3);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    for (String id : List.of(block(1, 0), block(1, 2))) {
      Throwable e = spark.failed.get(id);
      assertInstanceOf(IOException.class, e, id);
      assertTrue(e.getMessage().contains("does not hold map output " + mapId(1)), e.getMessage());
    }
    assertEquals(3, counters.slotReads.sum(), "two slots, the stale one read again once");
    assertEquals(1, counters.staleSlots.sum());
    assertEquals(Set.of(), spark.viaSpark, "a stale slot is no case for Spark's client");
  }

  @Test
  void aSlotRewrittenBeforeTheReReadIsUsed() {
    writeSlot(1, 999);
    AtomicInteger slotReads = new AtomicInteger();
    transport.script(
        r -> {
          if (isSlotRead(r, 1) && slotReads.incrementAndGet() == 2) {
            writeSlot(1, mapId(1)); // the map output was published meanwhile
          }
          return Action.serve();
        });
    fetch(task(), null, block(1, 2));
    spark.awaitEnded(1);
    assertArrayEquals(expected(1, 2, 3), spark.ok.get(block(1, 2)));
    assertEquals(2, slotReads.get());
    assertEquals(0, counters.staleSlots.sum());
  }

  @Test
  void tasksShareOneWholeIndexLoad() {
    transport.script(r -> isIndexRead(r, 0) ? Action.hold() : Action.serve());
    fetch(task(), null, block(0, 0));
    PostedRead load = transport.awaitHeld(1, WAIT).get(0);

    fetch(task(), null, block(0, 1), block(0, 2)); // another task, same executor
    InMemoryTransport.awaitCondition(
        () -> counters.indexCacheHits.sum() == 2,
        WAIT,
        () -> "the second task did not join the load: " + counters.snapshot());
    assertEquals(1, transport.held().size(), "the index is read once");
    assertEquals(Map.of(), spark.ok);

    load.serve();
    spark.awaitEnded(3);
    for (int r = 0; r < 3; r++) {
      assertArrayEquals(expected(0, r, r + 1), spark.ok.get(block(0, r)));
    }
    assertEquals(1, counters.indexReads.sum());
    assertNotNull(ctx.cache.cached(SHUFFLE, new Route(pointer, 0), mapId(0)).offsets());
  }

  @Test
  void aFailedSharedIndexLoadSendsEveryWaitingTasksBlocksToSparkAndIsRetriedLater() {
    transport.script(r -> isIndexRead(r, 0) ? Action.hold() : Action.serve());
    fetch(task(), null, block(0, 0));
    PostedRead load = transport.awaitHeld(1, WAIT).get(0);
    fetch(task(), null, block(0, 1), block(0, 2));
    InMemoryTransport.awaitCondition(
        () -> counters.indexCacheHits.sum() == 2,
        WAIT,
        () -> "the second task did not join the load");

    load.fail(
        new RemoteAccessException(
            RemoteAccessException.Reason.REGION_CLOSED,
            "scripted",
            indexRegions.get(0).remote().segments().get(0),
            load.peer()));
    spark.awaitEnded(3);
    assertEquals(Set.of(block(0, 0), block(0, 1), block(0, 2)), spark.viaSpark);
    assertEquals(Map.of(), spark.failed);

    // The load ended: a later task reads the index again instead of waiting on it.
    transport.script(r -> Action.serve());
    fetch(task(), null, block(0, 3));
    spark.awaitEnded(4);
    assertArrayEquals(expected(0, 3, 4), spark.ok.get(block(0, 3)));
    assertEquals(1, counters.indexReads.sum());
  }

  @Test
  void aRefusedDataReadSendsOnlyItsBlockToSparkAndForgetsItsMapOutput() {
    long failAt = offsets.get(0)[2];
    transport.script(
        r ->
            isDataRead(r, 0) && r.offsetInSegment() == failAt
                ? Action.fail(
                    new RemoteAccessException(
                        RemoteAccessException.Reason.REGION_CLOSED,
                        "scripted",
                        dataRegions.get(0).remote().segments().get(0),
                        r.peer()))
                : Action.serve());
    fetch(task(), null, block(0, 0), block(0, 1), block(0, 2), block(0, 3), block(1, 0));
    spark.awaitEnded(5);
    assertEquals(Set.of(block(0, 2)), spark.viaSpark);
    for (int r : new int[] {0, 1, 3}) {
      assertArrayEquals(expected(0, r, r + 1), spark.ok.get(block(0, r)));
    }
    assertArrayEquals(expected(1, 0, 1), spark.ok.get(block(1, 0)));
    assertNull(
        ctx.cache.cached(SHUFFLE, new Route(pointer, 0), mapId(0)),
        "a map output whose read failed is read afresh next time");
    assertNotNull(ctx.cache.cached(SHUFFLE, new Route(pointer, 1), mapId(1)));
  }

  @Test
  void aConnectionLostMidBatchSendsTheUnreadBlocksToSparkWithoutHanging() {
    long failAt = offsets.get(1)[2];
    transport.script(
        r ->
            isDataRead(r, 1) && r.offsetInSegment() == failAt
                ? Action.failConnection(
                    new TransferConnectionException("peer vanished (scripted)", r.peer(), null))
                : isDataRead(r, 1) ? Action.hold() : Action.serve());
    fetch(task(), null, block(0, 0), block(1, 0), block(1, 2), block(1, 3));
    spark.awaitEnded(4);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertEquals(Set.of(block(1, 0), block(1, 2), block(1, 3)), spark.viaSpark);
    // The transport may list a read it held after the connection failed (its script runs on the
    // posting thread, the failure on the I/O thread); what matters is that every one has ended.
    assertTrue(
        transport.held().stream().allMatch(PostedRead::isEnded),
        "held reads were failed with the connection: " + transport.held());
  }

  @Test
  void blocksSparkWantsOnDiskAreReadInPiecesIntoItsTempFiles() throws Exception {
    ctx.close();
    ctx = newContext(4096); // 20000 bytes: five reads
    Field conf = ReadServices.class.getDeclaredField("transportConf");
    conf.setAccessible(true); // no SparkEnv here: give the context Spark's transport settings
    conf.set(ctx, new TransportConf("shuffle", MapConfigProvider.EMPTY));
    TempFiles files = new TempFiles(tmp);

    AtomicInteger pieces = new AtomicInteger();
    transport.script(
        r -> {
          if (isDataRead(r, 0)) {
            pieces.incrementAndGet();
            assertTrue(r.length() <= 4096, "a piece is at most readBatchBytes");
          }
          return Action.serve();
        });
    fetch(task(), files, block(0, 2), block(0, 0));
    spark.awaitEnded(2);
    assertArrayEquals(expected(0, 2, 3), spark.ok.get(block(0, 2)));
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertEquals(5 + 1, pieces.get());
    assertEquals(2, counters.rdmaBlocksToDisk.sum());
    assertEquals(2, files.registered.size(), "Spark cleans the temp files");
  }

  @Test
  void blocksOfACachedIndexGetTheirDataPostedAfterTheOtherBlocksIndexRead() {
    fetch(task(), null, block(0, 0), block(1, 0));
    spark.awaitEnded(2);
    ctx.cache.drop(SHUFFLE, new Route(pointer, 1)); // map 1 is located afresh
    List<String> order = new CopyOnWriteArrayList<>();
    transport.script(
        r -> {
          order.add(
              isSlotRead(r, 1)
                  ? "slot 1"
                  : isIndexRead(r, 1)
                      ? "index 1"
                      : isDataRead(r, 0) ? "data 0" : isDataRead(r, 1) ? "data 1" : r.toString());
          return Action.serve();
        });
    fetch(task(), null, block(0, 1), block(1, 2));
    spark.awaitEnded(4);
    assertArrayEquals(expected(0, 1, 2), spark.ok.get(block(0, 1)));
    assertArrayEquals(expected(1, 2, 3), spark.ok.get(block(1, 2)));
    // Data 1 follows index 1's completion, on another thread than data 0's post: either order.
    assertEquals(Set.of("slot 1", "index 1", "data 0", "data 1"), Set.copyOf(order));
    assertEquals(4, order.size(), order.toString());
    assertTrue(
        order.indexOf("slot 1") < order.indexOf("index 1")
            && order.indexOf("index 1") < order.indexOf("data 0")
            && order.indexOf("index 1") < order.indexOf("data 1"),
        "the small index read must not queue behind the cached block's data: " + order);
  }

  @Test
  void anInvalidSharedIndexFailsEveryWaitingTasksBlocks() {
    transport.script(r -> isIndexRead(r, 0) ? Action.hold() : Action.serve());
    fetch(task(), null, block(0, 0));
    PostedRead load = transport.awaitHeld(1, WAIT).get(0);
    fetch(task(), null, block(0, 1), block(0, 2));
    InMemoryTransport.awaitCondition(
        () -> counters.indexCacheHits.sum() == 2,
        WAIT,
        () -> "the second task did not join the load");

    indexFiles.get(0).putLong(8, offsets.get(0)[2]).putLong(16, offsets.get(0)[1]); // decreasing
    load.serve();
    spark.awaitEnded(3);
    for (int r = 0; r < 3; r++) {
      Throwable e = spark.failed.get(block(0, r));
      assertInstanceOf(IOException.class, e, block(0, r));
      assertTrue(e.getMessage().contains("index of map output " + mapId(0)), e.getMessage());
    }
    assertEquals(Set.of(), spark.viaSpark, "an invalid index is no case for Spark's client");
    assertEquals(3, counters.failedBlocks.sum());
    assertNull(ctx.cache.cached(SHUFFLE, new Route(pointer, 0), mapId(0)).offsets());
  }

  @Test
  void aFailedPieceOfAToDiskBlockSendsItAndTheRestToSparkAndDeletesItsFile() throws Exception {
    ctx.close();
    ctx = newContext(4096);
    Field conf = ReadServices.class.getDeclaredField("transportConf");
    conf.setAccessible(true);
    conf.set(ctx, new TransportConf("shuffle", MapConfigProvider.EMPTY));
    TempFiles files = new TempFiles(tmp);
    long failAt = offsets.get(0)[2] + 4096; // the second piece of block 2
    transport.script(
        r ->
            isDataRead(r, 0) && r.offsetInSegment() == failAt
                ? Action.fail(
                    new RemoteAccessException(
                        RemoteAccessException.Reason.REGION_CLOSED,
                        "scripted",
                        dataRegions.get(0).remote().segments().get(0),
                        r.peer()))
                : Action.serve());
    fetch(task(), files, block(0, 2), block(0, 0));
    spark.awaitEnded(2);
    assertEquals(Set.of(block(0, 2), block(0, 0)), spark.viaSpark);
    assertEquals(2, counters.fallbackBlocks(FallbackCause.READ));
    assertEquals(0, counters.rdmaBlocksToDisk.sum());
    try (var left = java.nio.file.Files.list(tmp)) {
      assertEquals(List.of(), left.toList(), "the partial temp file is deleted");
    }
    assertNull(ctx.cache.cached(SHUFFLE, new Route(pointer, 0), mapId(0)));
  }

  /** The map node refuses every read of map index {@code m}'s slot (its key is unknown). */
  private void refuseSlotReads(int m) {
    transport.script(
        r ->
            isSlotRead(r, m)
                ? Action.fail(
                    new RemoteAccessException(
                        RemoteAccessException.Reason.UNKNOWN_KEY,
                        "scripted",
                        pointer.region().segments().get(0),
                        r.peer()))
                : Action.serve());
  }

  @Test
  void aBlockWhoseSlotReadFailsGoesToSparkOnceAndIsCountedOnce() {
    refuseSlotReads(1);
    fetch(task(), null, block(0, 0), block(1, 0), block(1, 2));
    spark.awaitEnded(3);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertEquals(List.of(List.of(block(1, 0), block(1, 2))), spark.handedOver, "one hand-over");
    assertEquals(2, counters.fallbackBlocks(FallbackCause.READ));
    assertEquals(2, counters.fallbackBlocks.sum(), "counted once, under one cause");
    assertEquals(0, counters.failedBlocks.sum());
    assertEquals(1, counters.rdmaBlocks.sum());
    assertNull(ctx.cache.cached(SHUFFLE, new Route(pointer, 1), mapId(1)));
  }

  @Test
  void withFallbackOffABlockWhoseSlotReadFailsFailsOnceAndIsNotHandedToSpark() {
    ctx.close();
    ctx = new ReadServices(reduceNode, 8, 1 << 20, false, 1 << 20, counters);
    refuseSlotReads(1);
    fetch(task(), null, block(0, 0), block(1, 0));
    spark.awaitEnded(2);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    Throwable e = spark.failed.get(block(1, 0));
    assertInstanceOf(IOException.class, e);
    assertTrue(e.getMessage().contains("spark.shuffle.rdma.fallback=false"), e.getMessage());
    assertEquals(List.of(), spark.handedOver);
    assertEquals(1, counters.failedBlocks.sum());
    assertEquals(0, counters.fallbackBlocks.sum());
  }

  /** Spark's temp-file manager for blocks fetched to disk. */
  private static final class TempFiles implements DownloadFileManager {
    final Path dir;
    final List<DownloadFile> registered = new ArrayList<>();

    TempFiles(Path dir) {
      this.dir = dir;
    }

    @Override
    public DownloadFile createTempFile(TransportConf transportConf) {
      try {
        File f = File.createTempFile("block", ".tmp", dir.toFile());
        return new SimpleDownloadFile(f, transportConf);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    @Override
    public synchronized boolean registerTempFileToClean(DownloadFile file) {
      registered.add(file);
      return true;
    }
  }
}
