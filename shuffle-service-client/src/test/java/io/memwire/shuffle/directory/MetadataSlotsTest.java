package io.memwire.shuffle.directory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.InMemoryTransport;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.MemoryAllocator;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shuffles too wide for inline entries: the MWS4 slot (a header naming the output's metadata
 * region, CRC over the header), the {@code memwire4} pointer, and a directory publishing real files
 * of 1100 reduce partitions with Spark's checksum file: one metadata region per output holding the
 * index entries then the checksums, booked on the directory's allocator, replaced and released with
 * the output, and outputs without checksums (or without room for a region) left header-only.
 */
class MetadataSlotsTest {
  private static final int PARTITIONS = 1100;
  private static final int ENTRIES = PARTITIONS + 1;

  @TempDir Path tmp;

  private final InMemoryTransport transport = new InMemoryTransport();
  private final TransferNode mapNode = transport.start();
  private final TransferNode reader = transport.start();

  @AfterEach
  void close() {
    reader.close();
    mapNode.close();
    transport.close();
    assertEquals(0, mapNode.stats().memoryBytes(), mapNode.memory().toVerboseString());
    assertTrue(mapNode.memory().leakReports().isEmpty(), mapNode.memory().leakReports().toString());
  }

  private RemoteRegion region(int bytes) {
    return TestRegions.register(mapNode, ByteBuffer.allocateDirect(bytes)).remote();
  }

  @Test
  void aMetadataSlotRoundTripsAndRejectsTornOrMisplacedHeaders() {
    RemoteRegion meta = region(DirectorySlot.metadataLength(ENTRIES));
    RemoteRegion data = region(4000);
    DirectorySlot slot =
        DirectorySlot.withMetadata(7, 1234L, meta, data, ENTRIES, ChecksumAlgorithm.ADLER32);
    ByteBuffer b = ByteBuffer.allocate(DirectorySlot.SIZE);
    slot.writeTo(b);
    assertEquals(0x4d575334, b.getInt(0), "MWS4");
    assertEquals(16L * ENTRIES - 8, b.getLong(24), "the metadata's length where the index's was");

    DirectorySlot read = DirectorySlot.read(b, 0, true);
    assertNotNull(read);
    assertEquals(7, read.mapIndex());
    assertEquals(1234L, read.mapId());
    assertEquals(meta, read.index());
    assertEquals(data, read.data());
    assertEquals(4000, read.dataLength());
    assertEquals(ENTRIES, read.metadataEntries());
    assertEquals(ChecksumAlgorithm.ADLER32, read.metadataAlgorithm());
    assertEquals(ENTRIES * 8L, read.indexLength(), "entries first, then checksums");
    assertNull(read.entries());
    assertNull(read.checksums(), "checksums come from the region, not the slot");
    assertNotNull(DirectorySlot.read(b), "any layout");

    assertNull(DirectorySlot.read(b, 0, false), "MWS4 in a memwire1 chunk (an older layout)");
    assertNull(DirectorySlot.read(b, 201, true), "MWS4 in a chunk with inline entries");

    for (int at : new int[] {4, 8, 16, 24, 40, 100, 240, 248}) {
      ByteBuffer torn = ByteBuffer.allocate(DirectorySlot.SIZE).put(b.duplicate()).flip();
      torn.put(at, (byte) (torn.get(at) ^ 0x40));
      assertNull(DirectorySlot.read(torn, 0, true), "byte " + at + " changed: CRC fails");
    }

    OutputChecksums sums = new OutputChecksums(ChecksumAlgorithm.ADLER32, new long[PARTITIONS]);
    DirectorySlot cached = read.withChecksums(sums);
    assertEquals(sums, cached.checksums());
    assertEquals(ENTRIES, cached.metadataEntries());
    assertEquals(ENTRIES * 8L, cached.indexLength());

    assertThrows(
        IllegalArgumentException.class,
        () -> DirectorySlot.withMetadata(7, 1L, region(64), data, ENTRIES, ChecksumAlgorithm.CRC32),
        "a region too small for the metadata");
    assertThrows(
        IllegalArgumentException.class,
        () -> DirectorySlot.withMetadata(7, 1L, meta, data, 1, ChecksumAlgorithm.CRC32));
  }

  @Test
  void aMetadataPointerHasItsOwnTagAndTheOldTagsStayAsTheyWere() {
    RemoteRegion chunk = region(DirectorySlot.SIZE * 4);
    DirectoryPointer p = new DirectoryPointer(2, 0, true, chunk);
    String info = p.toTopologyInfo("rack1");
    assertTrue(info.startsWith("rack1|memwire4:2:"), info);
    DirectoryPointer back = DirectoryPointer.fromTopologyInfo(info).orElseThrow();
    assertEquals(p, back);
    assertTrue(back.checksums());
    assertEquals(0, back.entries());
    assertEquals(DirectorySlot.SIZE, back.slotReadLength());
    assertEquals(ShuffleDirectory.SLOTS_PER_CHUNK, back.slotsPerChunk());
    assertFalse(p.equals(new DirectoryPointer(2, chunk)), "memwire1 is another layout");
    String old = new DirectoryPointer(2, chunk).toTopologyInfo(null);
    assertTrue(old.startsWith("memwire1:2:"), old);
    assertFalse(DirectoryPointer.fromTopologyInfo(old).orElseThrow().checksums());
  }

  private Path index(String name, long[] offsets) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(offsets.length * 8);
    for (long o : offsets) {
      b.putLong(o);
    }
    Path p = tmp.resolve(name + ".index");
    Files.write(p, b.array());
    return p;
  }

  private static long[] offsets(int seed) {
    long[] off = new long[ENTRIES];
    for (int r = 0; r < PARTITIONS; r++) {
      off[r + 1] = off[r] + (r * 7 + seed) % 50;
    }
    return off;
  }

  private static long[] values(int seed) {
    long[] v = new long[PARTITIONS];
    for (int r = 0; r < PARTITIONS; r++) {
      v[r] = 0x1234_5678_9abcL * (r + 1) + seed;
    }
    return v;
  }

  private ByteBuffer read(RemoteRegion region, long offset, int length) throws Exception {
    return RegionReads.read(reader, mapNode, region, offset, length);
  }

  /** Publishes one output of real files (checksums {@code sums}, null: none) and reads its slot. */
  private DirectorySlot publish(
      ShuffleDirectory dir, int shuffle, int mapIndex, long mapId, long[] off, OutputChecksums sums)
      throws Exception {
    Path idx = index("shuffle_" + shuffle + "_" + mapId + "_0", off);
    Path data = tmp.resolve("shuffle_" + shuffle + "_" + mapId + "_0.data");
    Files.write(data, new byte[(int) off[PARTITIONS]]);
    MemoryRegion i = mapNode.register(idx, 0, Files.size(idx), mapNode.memory());
    MemoryRegion d = mapNode.register(data, 0, Files.size(data), mapNode.memory());
    DirectoryPointer p = dir.publish(shuffle, mapIndex, mapId, i, d, sums);
    assertEquals(0, p.entries(), "too wide for inline entries");
    return DirectorySlot.read(
        read(p.region(), p.slotOffset(mapIndex), p.slotReadLength()), p.entries(), p.checksums());
  }

  @Test
  void aWideOutputGetsOneMetadataRegionOfItsEntriesThenItsChecksums() throws Exception {
    ShuffleDirectory dir = new ShuffleDirectory(mapNode);
    MemoryAllocator books = dir.allocator();
    long[] off = offsets(1);
    long[] v = values(1);
    DirectorySlot s =
        publish(dir, 4, 0, 40L, off, new OutputChecksums(ChecksumAlgorithm.CRC32C, v));
    assertNotNull(s);
    assertEquals(ENTRIES, s.metadataEntries());
    assertEquals(ChecksumAlgorithm.CRC32C, s.metadataAlgorithm());
    ByteBuffer meta = read(s.index(), 0, DirectorySlot.metadataLength(ENTRIES));
    long[] gotOffsets = new long[ENTRIES];
    long[] gotSums = new long[PARTITIONS];
    meta.asLongBuffer().get(gotOffsets).get(gotSums);
    assertArrayEquals(off, gotOffsets, "the index file's entries, as in the file");
    assertArrayEquals(v, gotSums, "then Spark's checksums");
    assertEquals(1, dir.metadataRegions(4));
    assertEquals(1, dir.fileRegions(4), "the data file's: the index file's region is closed");
    assertEquals(
        (long) ShuffleDirectory.SLOTS_PER_CHUNK * DirectorySlot.SIZE
            + DirectorySlot.metadataLength(ENTRIES),
        books.registeredBytes(),
        "chunk and metadata registered on the directory's allocator");

    // The same map index again: the new output's region replaces the old one, which is released.
    long[] v2 = values(2);
    DirectorySlot again =
        publish(dir, 4, 0, 41L, offsets(2), new OutputChecksums(ChecksumAlgorithm.CRC32C, v2));
    assertEquals(41L, again.mapId());
    assertEquals(1, dir.metadataRegions(4));
    RemoteRegion oldMeta = s.index();
    ExecutionException gone =
        assertThrows(
            ExecutionException.class,
            () ->
                reader
                    .connection(mapNode.localAddress())
                    .read(ReadRequest.of(oldMeta, 0, 8))
                    .get(30, TimeUnit.SECONDS));
    assertNotNull(gone.getCause());
    ByteBuffer sums2 = read(again.index(), ENTRIES * 8L, PARTITIONS * 8);
    assertEquals(v2[PARTITIONS - 1], sums2.getLong((PARTITIONS - 1) * 8));

    // An output without checksums, or with another count, beside it: header only, unverified.
    DirectorySlot bare = publish(dir, 4, 1, 42L, offsets(3), null);
    assertEquals(0, bare.metadataEntries());
    assertEquals(ENTRIES * 8L, bare.index().length(), "its index file");
    DirectorySlot wrong =
        publish(
            dir, 4, 2, 43L, offsets(4), new OutputChecksums(ChecksumAlgorithm.CRC32C, new long[3]));
    assertEquals(0, wrong.metadataEntries());
    assertEquals(1, dir.metadataRegions(4));

    dir.unregister(4);
    assertEquals(0, dir.metadataRegions(4));
    assertEquals(0, books.liveUnits(), books.toVerboseString());
    dir.close();
  }

  @Test
  void aShuffleWhoseFirstOutputHasNoChecksumsKeepsPlainHeaders() throws Exception {
    try (ShuffleDirectory dir = new ShuffleDirectory(mapNode)) {
      Path idx = index("shuffle_5_50_0", offsets(5));
      MemoryRegion i = mapNode.register(idx, 0, Files.size(idx), mapNode.memory());
      DirectoryPointer p = dir.publish(5, 0, 50L, i, null, null);
      assertFalse(p.checksums(), "memwire1: readers of older versions read it");
      DirectorySlot later =
          publish(
              dir, 5, 1, 51L, offsets(6), new OutputChecksums(ChecksumAlgorithm.CRC32, values(6)));
      assertEquals(0, later.metadataEntries(), "no room for metadata in this shuffle's chunks");
      assertEquals(0, dir.metadataRegions(5));
    }
  }

  @Test
  void noRoomForAMetadataRegionLeavesTheOutputHeaderOnlyAndNothingLeaked() throws Exception {
    long chunk = (long) ShuffleDirectory.SLOTS_PER_CHUNK * DirectorySlot.SIZE;
    long meta = DirectorySlot.metadataLength(ENTRIES);
    MemoryAllocator app = mapNode.memory().newChild("app", chunk + meta + 1000);
    try (ShuffleDirectory dir = new ShuffleDirectory(mapNode, app, "app/1")) {
      DirectorySlot first =
          publish(
              dir, 6, 0, 60L, offsets(7), new OutputChecksums(ChecksumAlgorithm.CRC32, values(7)));
      assertEquals(ENTRIES, first.metadataEntries());
      DirectorySlot second =
          publish(
              dir, 6, 1, 61L, offsets(8), new OutputChecksums(ChecksumAlgorithm.CRC32, values(8)));
      assertEquals(0, second.metadataEntries(), "17 KiB of metadata over the limit: unverified");
      assertEquals(ENTRIES * 8L, second.index().length(), "its index file instead");
      assertEquals(1, dir.metadataRegions(6));
      assertEquals(
          chunk + meta, app.registeredBytes(), "the chunk and the first output's metadata");
    }
    assertEquals(0, app.registeredBytes());
    app.close();
  }
}
