package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.TestSlots;
import io.memwire.transfer.InMemoryTransport;
import io.memwire.transfer.InMemoryTransport.Action;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.Checksum;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.apache.spark.network.shuffle.checksum.Cause;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A shuffle too wide for inline entries (1100 reduce partitions), its outputs' slots naming
 * metadata regions (MWS4: index entries, then Spark's checksums) in a chunk of headers only: every
 * block verified, its checksums read in the batch of its index entries (the whole region when the
 * index cache has room, else the block's entries and checksums as two reads of one batch), stored
 * data or checksum bytes corrupted failing the block with the disk cause after one re-read, a
 * transfer fault cleared by the re-read, and an MWS1 slot beside them read unverified and counted.
 */
class WideChecksumReadPathTest {
  private static final int SHUFFLE = 3;
  private static final int MAPS = 2;
  private static final int PARTITIONS = 1100;
  private static final int ENTRIES = PARTITIONS + 1;

  private final InMemoryTransport transport = new InMemoryTransport();
  private final TransferNode mapNode = transport.start();
  private final TransferNode reduceNode = transport.start();
  private final List<ByteBuffer> metadata = new ArrayList<>();
  private final List<MemoryRegion> metadataRegions = new ArrayList<>();
  private final List<MemoryRegion> dataRegions = new ArrayList<>();
  private final List<ByteBuffer> dataBuffers = new ArrayList<>();
  private final List<long[]> offsets = new ArrayList<>();
  private final List<long[]> sums = new ArrayList<>();
  private final List<byte[]> data = new ArrayList<>();
  private final Map<Long, Route> routes = new HashMap<>();
  private final ShuffleCounters counters = new ShuffleCounters();
  private final RecordingSpark spark = new RecordingSpark();
  private ByteBuffer chunk;
  private ReadServices ctx;

  /** Flips bytes of the data reads it is told to, as they arrive (before the check). */
  private final TransportFaults arrivalFaults = new TransportFaults();

  /** Both outputs, MWS4 slots, and a reader whose index cache holds {@code indexCache} bytes. */
  private void setUp(long indexCache) {
    chunk = ByteBuffer.allocateDirect(MAPS * DirectorySlot.SIZE);
    DirectoryPointer pointer =
        new DirectoryPointer(0, 0, true, TestRegions.register(mapNode, chunk).remote());
    for (int m = 0; m < MAPS; m++) {
      long[] off = new long[ENTRIES];
      for (int r = 0; r < PARTITIONS; r++) {
        off[r + 1] = off[r] + (r % 7 == 3 ? 0 : 1 + (r * 13 + m) % 40); // some partitions empty
      }
      byte[] bytes = new byte[(int) off[PARTITIONS]];
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] = (byte) (i * 31 + m * 7 + 1);
      }
      long[] v = new long[PARTITIONS];
      for (int r = 0; r < PARTITIONS; r++) {
        Checksum c = ChecksumAlgorithm.CRC32C.newChecksum();
        c.update(bytes, (int) off[r], (int) (off[r + 1] - off[r]));
        v[r] = c.getValue();
      }
      ByteBuffer d = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
      ByteBuffer meta = ByteBuffer.allocateDirect(DirectorySlot.metadataLength(ENTRIES));
      for (long o : off) {
        meta.putLong(o);
      }
      for (long s : v) {
        meta.putLong(s);
      }
      meta.flip();
      dataBuffers.add(d);
      dataRegions.add(TestRegions.register(mapNode, d));
      metadata.add(meta);
      metadataRegions.add(TestRegions.register(mapNode, meta));
      offsets.add(off);
      sums.add(v);
      data.add(bytes);
      TestSlots.write(
          DirectorySlot.withMetadata(
              m,
              mapId(m),
              metadataRegions.get(m).remote(),
              dataRegions.get(m).remote(),
              ENTRIES,
              ChecksumAlgorithm.CRC32C),
          chunk,
          m * DirectorySlot.SIZE);
      routes.put(mapId(m), new Route(pointer, m));
    }
    ctx = new ReadServices(reduceNode, 8, 1 << 20, true, indexCache, counters, arrivalFaults);
  }

  @AfterEach
  void tearDown() {
    if (ctx != null) {
      ctx.close();
    }
    reduceNode.close();
    mapNode.close();
    assertEquals(0, reduceNode.stats().poolBuffersOutstanding(), "read buffers not returned");
    transport.close();
  }

  private static long mapId(int m) {
    return 200L + m;
  }

  private static String block(int m, int r) {
    return "shuffle_" + SHUFFLE + "_" + mapId(m) + "_" + r;
  }

  private static String batch(int m, int from, int to) {
    return "shuffle_" + SHUFFLE + "_" + mapId(m) + "_" + from + "_" + to;
  }

  private byte[] expected(int m, int from, int to) {
    long[] off = offsets.get(m);
    byte[] out = new byte[(int) (off[to] - off[from])];
    System.arraycopy(data.get(m), (int) off[from], out, 0, out.length);
    return out;
  }

  private void fetch(String... ids) {
    new RdmaBlockStoreClient(ctx, SHUFFLE, routes, spark)
        .fetchBlocks("map-host", 7337, "exec-1", ids, spark.listener, (DownloadFileManager) null);
  }

  private List<Integer> recordMetadataReads() {
    List<Integer> lengths = new CopyOnWriteArrayList<>();
    transport.script(
        r -> {
          for (MemoryRegion meta : metadataRegions) {
            if (r.remoteKey() == meta.remote().segments().get(0).key()) {
              lengths.add(r.length());
            }
          }
          return Action.serve();
        });
    return lengths;
  }

  @Test
  void theWholeMetadataRegionIsReadOnceAndEveryBlockVerified() {
    setUp(1 << 20);
    List<Integer> metaReads = recordMetadataReads();
    fetch(block(0, 0), block(0, 1099), block(1, 501), batch(1, 10, 30), block(1, 4));
    spark.awaitEndedOneSided(5);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertArrayEquals(expected(0, 1099, 1100), spark.ok.get(block(0, 1099)));
    assertArrayEquals(expected(1, 501, 502), spark.ok.get(block(1, 501)));
    assertArrayEquals(expected(1, 10, 30), spark.ok.get(batch(1, 10, 30)));
    assertArrayEquals(expected(1, 4, 5), spark.ok.get(block(1, 4)));
    assertEquals(5, counters.checksumVerifiedBlocks.sum());
    assertEquals(0, counters.checksumUnverifiedBlocks.sum());
    assertEquals(
        List.of(DirectorySlot.metadataLength(ENTRIES), DirectorySlot.metadataLength(ENTRIES)),
        metaReads,
        "each output's entries and checksums in one read");
    assertEquals(2, counters.metadataReads.sum(), "slots, then entries and checksums: no extra");

    // Later reads of the same outputs: data only, still verified (checksums cached with entries).
    fetch(block(0, 7), block(1, 8));
    spark.awaitEndedOneSided(7);
    assertEquals(2, counters.metadataReads.sum());
    assertEquals(7, counters.checksumVerifiedBlocks.sum());
    assertArrayEquals(expected(1, 8, 9), spark.ok.get(block(1, 8)));
  }

  @Test
  void withoutIndexCacheEachBlockReadsItsEntriesAndChecksumsInOneBatch() {
    setUp(0);
    List<Integer> metaReads = recordMetadataReads();
    fetch(block(0, 5), batch(1, 100, 104));
    spark.awaitEndedOneSided(2);
    assertArrayEquals(expected(0, 5, 6), spark.ok.get(block(0, 5)));
    assertArrayEquals(expected(1, 100, 104), spark.ok.get(batch(1, 100, 104)));
    assertEquals(2, counters.checksumVerifiedBlocks.sum());
    assertEquals(2, counters.metadataReads.sum(), "one slot batch, one entries/checksums batch");
    assertEquals(
        Set.of(16, 8, 40, 32), Set.copyOf(metaReads), "entries and checksums of each block");
    assertEquals(4, metaReads.size());
  }

  private Cause diagnose(int m, int r, long readerChecksum, String algorithm) {
    return new RdmaBlockStoreClient(ctx, SHUFFLE, routes, spark)
        .diagnoseCorruption(
            "map-host", 7337, "exec-1", SHUFFLE, mapId(m), r, readerChecksum, algorithm);
  }

  @Test
  void aBlockReadBlockByBlockIsDiagnosedWithoutTheWriter() {
    setUp(0); // no index cache: checksums come with each block's entries, none kept
    int r = 9;
    while (offsets.get(0)[r + 1] == offsets.get(0)[r]) {
      r++;
    }
    long stored = sums.get(0)[r];
    assertEquals(Cause.CHECKSUM_VERIFY_PASS, diagnose(0, r, stored, "CRC32C"));
    assertEquals(Cause.NETWORK_ISSUE, diagnose(0, r, stored ^ 1, "CRC32C"));
    assertEquals(Cause.UNKNOWN_ISSUE, diagnose(0, r, stored, "ADLER32"), "not what was written");
    ByteBuffer d = dataBuffers.get(0);
    int at = (int) offsets.get(0)[r];
    d.put(at, (byte) ~d.get(at));
    assertEquals(Cause.DISK_ISSUE, diagnose(0, r, stored, "CRC32C"));
    assertEquals(List.of(), spark.handedOver, "nothing asked of Spark's client");
  }

  @Test
  void corruptStoredDataFailsTheBlockWithTheDiskCauseAfterOneReRead() {
    setUp(0);
    int r = 600;
    while (offsets.get(0)[r + 1] == offsets.get(0)[r]) {
      r++;
    }
    int at = (int) offsets.get(0)[r];
    ByteBuffer d = dataBuffers.get(0);
    d.put(at, (byte) ~d.get(at));
    fetch(block(0, r), block(0, 1));
    spark.awaitEndedOneSided(2);
    Throwable e = spark.failed.get(block(0, r));
    assertInstanceOf(ChecksumMismatchException.class, e);
    assertTrue(
        e.getMessage().contains("checksum mismatch in block " + block(0, r)), e.getMessage());
    assertTrue(e.getMessage().contains("expected CRC32C " + sums.get(0)[r]), e.getMessage());
    assertTrue(e.getMessage().contains("cause: disk"), e.getMessage());
    assertEquals(1, counters.checksumMismatchesDisk.sum());
    assertEquals(List.of(), spark.handedOver, "never to Spark's client");
  }

  @Test
  void corruptChecksumBytesInTheMetadataAreADiskCauseInBothReadPaths() {
    for (long cache : new long[] {0, 1 << 20}) {
      setUp(cache);
      int r = 700;
      while (offsets.get(1)[r + 1] == offsets.get(1)[r]) {
        r++;
      }
      long wrong = sums.get(1)[r] ^ 0x10;
      metadata.get(1).putLong((ENTRIES + r) * 8, wrong);
      fetch(block(1, r), block(1, 2));
      spark.awaitEndedOneSided(2);
      Throwable e = spark.failed.get(block(1, r));
      assertInstanceOf(ChecksumMismatchException.class, e, "cache " + cache);
      assertTrue(e.getMessage().contains("expected CRC32C " + wrong), e.getMessage());
      assertTrue(e.getMessage().contains("found " + sums.get(1)[r]), e.getMessage());
      assertTrue(e.getMessage().contains("cause: disk"), e.getMessage());
      assertArrayEquals(expected(1, 2, 3), spark.ok.get(block(1, 2)));
      assertEquals(1, counters.checksumMismatchesDisk.sum());
      tearDownForNext();
    }
  }

  /** Resets the state one setUp built, so a test can run both read paths. */
  private void tearDownForNext() {
    ctx.close();
    ctx = null;
    spark.ok.clear();
    spark.failed.clear();
    counters.checksumMismatchesDisk.reset();
    metadataRegions.forEach(MemoryRegion::close);
    dataRegions.forEach(MemoryRegion::close);
    metadata.clear();
    metadataRegions.clear();
    dataRegions.clear();
    dataBuffers.clear();
    offsets.clear();
    sums.clear();
    data.clear();
    routes.clear();
  }

  @Test
  void aFaultOnTheTransferIsReadOnceMoreAndDeliveredRight() {
    setUp(1 << 20);
    arrivalFaults.inject(1);
    fetch(block(0, 1), batch(1, 0, 40));
    spark.awaitEndedOneSided(2);
    assertArrayEquals(expected(0, 1, 2), spark.ok.get(block(0, 1)));
    assertArrayEquals(expected(1, 0, 40), spark.ok.get(batch(1, 0, 40)));
    assertEquals(1, counters.checksumMismatchesNetwork.sum());
    assertEquals(0, counters.checksumMismatchesDisk.sum());
    assertEquals(0, counters.failedBlocks.sum());
  }

  @Test
  void aHeaderOnlySlotBesideThemIsReadUnverifiedAndCounted() throws IOException {
    setUp(1 << 20);
    ByteBuffer idx = ByteBuffer.allocateDirect(ENTRIES * 8);
    for (long o : offsets.get(1)) {
      idx.putLong(o);
    }
    MemoryRegion index = TestRegions.register(mapNode, idx.flip());
    TestSlots.write(
        new DirectorySlot(1, mapId(1), index.remote(), dataRegions.get(1).remote()),
        chunk,
        DirectorySlot.SIZE);
    fetch(block(0, 9), block(1, 9), block(1, 11));
    spark.awaitEndedOneSided(3);
    assertArrayEquals(expected(1, 9, 10), spark.ok.get(block(1, 9)));
    assertArrayEquals(expected(1, 11, 12), spark.ok.get(block(1, 11)));
    assertEquals(1, counters.checksumVerifiedBlocks.sum());
    assertEquals(2, counters.checksumUnverifiedBlocks.sum());
    index.close();
  }
}
