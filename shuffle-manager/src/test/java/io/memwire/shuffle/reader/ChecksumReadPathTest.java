package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.ChunkLayout;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import io.memwire.shuffle.directory.TestSlots;
import io.memwire.transfer.InMemoryTransport;
import io.memwire.transfer.InMemoryTransport.Action;
import io.memwire.transfer.InMemoryTransport.PostedRead;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TcpTransportFaults;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.Checksum;
import org.apache.spark.network.shuffle.DownloadFile;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.apache.spark.network.shuffle.SimpleDownloadFile;
import org.apache.spark.network.shuffle.checksum.Cause;
import org.apache.spark.network.util.MapConfigProvider;
import org.apache.spark.network.util.TransportConf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Blocks checked against Spark's checksums on the in-memory provider: a directory whose slots carry
 * each output's checksums (as the writer lays it out when Spark wrote a checksum file), the reader
 * unchanged. Stored bytes corrupted (data or checksum) fail the block as a fetch failure naming the
 * mismatch and the disk cause after one re-read; a fault on the transfer is cleared by the re-read;
 * memory and disk, plain and batch blocks alike; each algorithm Spark offers.
 */
class ChecksumReadPathTest {
  private static final int SHUFFLE = 7;
  private static final int MAPS = 2;
  private static final int[][] SIZES = {{1000, 3000, 20000, 700}, {4096, 1, 5000, 12345}};

  @TempDir Path tmp;

  private final InMemoryTransport transport = new InMemoryTransport();
  private TransferNode mapNode = transport.start();
  private TransferNode reduceNode = transport.start();
  private final List<MemoryRegion> indexRegions = new ArrayList<>();
  private final List<MemoryRegion> dataRegions = new ArrayList<>();
  private final List<ByteBuffer> dataBuffers = new ArrayList<>();
  private final List<long[]> offsets = new ArrayList<>();
  private final List<byte[]> data = new ArrayList<>();
  private final Map<Long, Route> routes = new HashMap<>();
  private final ShuffleCounters counters = new ShuffleCounters();
  private final RecordingSpark spark = new RecordingSpark();
  private ByteBuffer chunk;
  private DirectoryPointer pointer;
  private ReadServices ctx;

  /** Flips bytes of the data reads it is told to, as they arrive (before the check). */
  private final TransportFaults arrivalFaults = new TransportFaults();

  /** Lays out both map outputs and a directory with their checksums ({@code algorithm}). */
  private void setUp(ChecksumAlgorithm algorithm, long readBatchBytes) {
    int entries = SIZES[0].length + 1;
    chunk = ByteBuffer.allocateDirect(MAPS * ChunkLayout.stride(entries, true));
    pointer = new DirectoryPointer(0, entries, true, TestRegions.register(mapNode, chunk).remote());
    for (int m = 0; m < MAPS; m++) {
      long[] off = new long[entries];
      for (int r = 0; r < SIZES[m].length; r++) {
        off[r + 1] = off[r] + SIZES[m][r];
      }
      byte[] bytes = new byte[(int) off[entries - 1]];
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] = (byte) (i * 7 + m * 101 + 3);
      }
      ByteBuffer d = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
      ByteBuffer idx = ByteBuffer.allocateDirect(entries * 8);
      for (long o : off) {
        idx.putLong(o);
      }
      dataBuffers.add(d);
      dataRegions.add(TestRegions.register(mapNode, d));
      indexRegions.add(TestRegions.register(mapNode, idx.flip()));
      offsets.add(off);
      data.add(bytes);
      writeSlot(m, sums(algorithm, bytes, off));
      routes.put(mapId(m), new Route(pointer, m));
    }
    ctx = new ReadServices(reduceNode, 8, readBatchBytes, true, 1 << 20, counters, arrivalFaults);
  }

  /** Spark's checksum file of one output, computed as Spark's writer does (JDK checksums). */
  private static OutputChecksums sums(ChecksumAlgorithm a, byte[] bytes, long[] off) {
    long[] v = new long[off.length - 1];
    for (int r = 0; r < v.length; r++) {
      Checksum c = a.newChecksum();
      c.update(bytes, (int) off[r], (int) (off[r + 1] - off[r]));
      v[r] = c.getValue();
    }
    return new OutputChecksums(a, v);
  }

  private void writeSlot(int m, OutputChecksums sums) {
    TestSlots.write(
        new DirectorySlot(
            m,
            mapId(m),
            indexRegions.get(m).remote(),
            dataRegions.get(m).remote(),
            offsets.get(m),
            sums),
        chunk,
        m * ChunkLayout.stride(pointer.entries(), true));
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
    return 100L + m;
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

  private void fetch(DownloadFileManager toDisk, String... ids) {
    new RdmaBlockStoreClient(ctx, SHUFFLE, routes, spark)
        .fetchBlocks("map-host", 7337, "exec-1", ids, spark.listener, toDisk);
  }

  private boolean isDataRead(PostedRead r, int m) {
    return r.remoteKey() == dataRegions.get(m).remote().segments().get(0).key();
  }

  /** Flips one stored byte of map {@code m}'s data, in reduce partition {@code r}. */
  private void corruptStored(int m, int r) {
    int at = (int) offsets.get(m)[r] + 5;
    ByteBuffer d = dataBuffers.get(m);
    d.put(at, (byte) ~d.get(at));
  }

  private void onDisk() throws Exception {
    Field conf = ReadServices.class.getDeclaredField("transportConf");
    conf.setAccessible(true); // no SparkEnv here: give the context Spark's transport settings
    conf.set(ctx, new TransportConf("shuffle", MapConfigProvider.EMPTY));
  }

  @ParameterizedTest
  @EnumSource(ChecksumAlgorithm.class)
  void everyBlockIsVerifiedWithEachAlgorithmSparkOffers(ChecksumAlgorithm a) {
    setUp(a, 1 << 20);
    fetch(null, block(0, 0), block(0, 2), block(1, 3), batch(1, 1, 3));
    spark.awaitEnded(4);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertArrayEquals(expected(0, 2, 3), spark.ok.get(block(0, 2)));
    assertArrayEquals(expected(1, 3, 4), spark.ok.get(block(1, 3)));
    assertArrayEquals(expected(1, 1, 3), spark.ok.get(batch(1, 1, 3)));
    assertEquals(4, counters.checksumVerifiedBlocks.sum());
    assertEquals(0, counters.checksumUnverifiedBlocks.sum());
    assertEquals(1, counters.metadataReads.sum(), "checksums come with the slot: no extra trip");
  }

  @Test
  void corruptStoredBytesAreReadTwiceThenFailTheBlockNamingTheMismatchAndTheDiskCause() {
    setUp(ChecksumAlgorithm.ADLER32, 1 << 20);
    corruptStored(0, 2);
    AtomicInteger reads = new AtomicInteger();
    transport.script(
        r -> {
          if (isDataRead(r, 0) && r.offsetInSegment() == offsets.get(0)[2]) {
            reads.incrementAndGet();
          }
          return Action.serve();
        });
    fetch(null, block(0, 0), block(0, 2), batch(0, 1, 4), block(1, 0));
    spark.awaitEnded(4);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    assertArrayEquals(expected(1, 0, 1), spark.ok.get(block(1, 0)));
    Throwable e = spark.failed.get(block(0, 2));
    assertInstanceOf(ChecksumMismatchException.class, e);
    String msg = e.getMessage();
    assertTrue(msg.contains("checksum mismatch in block " + block(0, 2)), msg);
    assertTrue(msg.contains("expected ADLER32 "), msg);
    assertTrue(msg.contains("found "), msg);
    assertTrue(msg.contains("cause: disk"), msg);
    Throwable b = spark.failed.get(batch(0, 1, 4));
    assertInstanceOf(ChecksumMismatchException.class, b);
    assertTrue(b.getMessage().contains("reduce partition 2 "), b.getMessage());
    assertEquals(2, reads.get(), "the block read, then read once more");
    assertEquals(2, counters.checksumMismatchesDisk.sum());
    assertEquals(0, counters.checksumMismatchesNetwork.sum());
    assertEquals(2, counters.checksumVerifiedBlocks.sum());
    assertEquals(2, counters.failedBlocks.sum());
    assertEquals(List.of(), spark.handedOver, "never to Spark's client: it would serve them");
  }

  @Test
  void aCorruptChecksumIsADiskCauseToo() {
    setUp(ChecksumAlgorithm.CRC32, 1 << 20);
    OutputChecksums right = sums(ChecksumAlgorithm.CRC32, data.get(1), offsets.get(1));
    long[] wrong = right.values().clone();
    wrong[3] ^= 1;
    writeSlot(1, new OutputChecksums(ChecksumAlgorithm.CRC32, wrong));
    fetch(null, block(1, 2), block(1, 3));
    spark.awaitEnded(2);
    assertArrayEquals(expected(1, 2, 3), spark.ok.get(block(1, 2)));
    Throwable e = spark.failed.get(block(1, 3));
    assertTrue(e.getMessage().contains("expected CRC32 " + wrong[3]), e.getMessage());
    assertTrue(e.getMessage().contains("found " + right.values()[3]), e.getMessage());
    assertEquals(1, counters.checksumMismatchesDisk.sum());
  }

  @Test
  void aFaultOnTheTransferIsReadOnceMoreAndDeliveredRight() {
    setUp(ChecksumAlgorithm.CRC32C, 1 << 20);
    arrivalFaults.inject(1);
    fetch(null, block(0, 1), batch(1, 0, 4));
    spark.awaitEnded(2);
    assertArrayEquals(expected(0, 1, 2), spark.ok.get(block(0, 1)));
    assertArrayEquals(expected(1, 0, 4), spark.ok.get(batch(1, 0, 4)));
    assertEquals(1, counters.checksumMismatchesNetwork.sum());
    assertEquals(0, counters.checksumMismatchesDisk.sum());
    assertEquals(2, counters.checksumVerifiedBlocks.sum());
    assertEquals(0, counters.failedBlocks.sum());
  }

  @Test
  void aByteFlippedOnTheTcpTransferIsReadOnceMoreAndDeliveredRight() {
    mapNode.close();
    reduceNode.close();
    TransferConfig tcp =
        TransferConfig.builder().provider(ProviderKind.TCP).bindAddress("127.0.0.1").build();
    TcpTransportFaults faults = new TcpTransportFaults();
    mapNode = TransferNode.start(tcp);
    reduceNode = faults.start(tcp);
    setUp(ChecksumAlgorithm.CRC32C, 1 << 20);
    fetch(null, block(0, 0), block(1, 0)); // slots and indexes cached: later reads are data only
    spark.awaitEnded(2);
    faults.flipNext(1);
    fetch(null, block(0, 2), batch(1, 1, 4));
    spark.awaitEnded(4);
    assertEquals(1, faults.flipped(), "one response corrupted on the reading side");
    assertArrayEquals(expected(0, 2, 3), spark.ok.get(block(0, 2)));
    assertArrayEquals(expected(1, 1, 4), spark.ok.get(batch(1, 1, 4)));
    assertEquals(1, counters.checksumMismatchesNetwork.sum());
    assertEquals(0, counters.checksumMismatchesDisk.sum());
    assertEquals(0, counters.failedBlocks.sum());
    assertEquals(Map.of(), spark.failed);
  }

  @Test
  void blocksOnDiskAreVerifiedPieceByPiece() throws Exception {
    setUp(ChecksumAlgorithm.ADLER32, 4096); // 20000 bytes: five pieces
    onDisk();
    TempFiles files = new TempFiles(tmp);
    arrivalFaults.inject(1);
    fetch(files, block(0, 2), batch(1, 0, 4));
    spark.awaitEnded(2);
    assertArrayEquals(expected(0, 2, 3), spark.ok.get(block(0, 2)));
    assertArrayEquals(expected(1, 0, 4), spark.ok.get(batch(1, 0, 4)));
    assertEquals(1, counters.checksumMismatchesNetwork.sum(), "the faulty copy read again");
    assertEquals(2, counters.checksumVerifiedBlocks.sum());

    corruptStored(1, 3);
    fetch(files, block(1, 3), block(0, 0));
    spark.awaitEnded(4);
    assertArrayEquals(expected(0, 0, 1), spark.ok.get(block(0, 0)));
    Throwable e = spark.failed.get(block(1, 3));
    assertInstanceOf(ChecksumMismatchException.class, e);
    assertTrue(e.getMessage().contains("cause: disk"), e.getMessage());
    assertEquals(1, counters.checksumMismatchesDisk.sum());
    try (var left = Files.list(tmp)) {
      assertEquals(3, left.count(), "the corrupt block's files deleted, the good ones kept");
    }
  }

  @Test
  void anOutputWithoutChecksumsIsReadUnverifiedAndCounted() {
    setUp(ChecksumAlgorithm.ADLER32, 1 << 20);
    TestSlots.write(
        new DirectorySlot(
            1, mapId(1), indexRegions.get(1).remote(), dataRegions.get(1).remote(), offsets.get(1)),
        chunk,
        ChunkLayout.stride(pointer.entries(), true));
    fetch(null, block(0, 0), block(1, 0), block(1, 2));
    spark.awaitEnded(3);
    assertArrayEquals(expected(1, 2, 3), spark.ok.get(block(1, 2)));
    assertEquals(1, counters.checksumVerifiedBlocks.sum());
    assertEquals(2, counters.checksumUnverifiedBlocks.sum());
  }

  private Cause diagnose(int m, int r, long readerChecksum, String algorithm) {
    return new RdmaBlockStoreClient(ctx, SHUFFLE, routes, spark)
        .diagnoseCorruption(
            "map-host", 7337, "exec-1", SHUFFLE, mapId(m), r, readerChecksum, algorithm);
  }

  @Test
  void aCorruptBlockIsDiagnosedFromItsRegionWithoutTheWritersBlockManager() {
    setUp(ChecksumAlgorithm.CRC32, 1 << 20);
    long[] stored = sums(ChecksumAlgorithm.CRC32, data.get(0), offsets.get(0)).values();
    assertEquals(Cause.CHECKSUM_VERIFY_PASS, diagnose(0, 2, stored[2], "CRC32"));
    assertEquals(Cause.NETWORK_ISSUE, diagnose(0, 1, stored[1] ^ 1, "CRC32"));
    assertEquals(Cause.UNKNOWN_ISSUE, diagnose(0, 1, stored[1], "ADLER32"), "no such file");
    corruptStored(0, 3);
    assertEquals(Cause.DISK_ISSUE, diagnose(0, 3, stored[3], "CRC32"));
    TestSlots.write(
        new DirectorySlot(
            1, mapId(1), indexRegions.get(1).remote(), dataRegions.get(1).remote(), offsets.get(1)),
        chunk,
        ChunkLayout.stride(pointer.entries(), true));
    assertEquals(Cause.UNKNOWN_ISSUE, diagnose(1, 0, 42L, "CRC32"), "no checksum stored");
    assertEquals(List.of(), spark.handedOver, "nothing asked of Spark's client");
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
