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
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's checksums carried inline after a slot's entries: the MWS3 format (algorithm, values and
 * CRC checked), the {@code memwire3} pointer, and a directory publishing real files with Spark's
 * checksum file beside the index (of each algorithm), without one, or with one of the wrong size.
 */
class ChecksumSlotsTest {
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
  }

  private static RemoteRegion region(TransferNode node, int bytes) {
    return TestRegions.register(node, ByteBuffer.allocateDirect(bytes)).remote();
  }

  @Test
  void aChecksumSlotRoundTripsAndRejectsTornOrMisplacedBytes() {
    long[] entries = {0, 10, 10, 25};
    OutputChecksums sums = new OutputChecksums(ChecksumAlgorithm.CRC32C, new long[] {7, 1, -3});
    DirectorySlot slot =
        new DirectorySlot(2, 99L, region(mapNode, 32), region(mapNode, 25), entries, sums);
    ByteBuffer b = ByteBuffer.allocate(ChunkLayout.readLength(4, true));
    slot.writeTo(b);

    DirectorySlot read = DirectorySlot.read(b, 4, true);
    assertNotNull(read);
    assertArrayEquals(entries, read.entries());
    assertEquals(sums, read.checksums());
    assertEquals(sums, read.withoutEntries().checksums(), "a cached header keeps its checksums");
    assertNull(read.withoutEntries().entries());

    assertNull(DirectorySlot.read(b, 4), "MWS3 where the directory has no room for checksums");
    assertNull(DirectorySlot.read(b, 0, false), "MWS3 in a directory of headers only");
    assertNotNull(DirectorySlot.read(b), "the header alone decodes");
    ByteBuffer torn = ByteBuffer.allocate(b.capacity()).put(b.duplicate()).flip();
    torn.putLong(DirectorySlot.SIZE + 4 * 8 + 8, 12345L); // a checksum value changed
    assertNull(DirectorySlot.read(torn, 4, true), "checksums are under the CRC");

    // An MWS2 slot in a directory with room for checksums: entries, no checksums (unverified).
    ByteBuffer plain = ByteBuffer.allocate(ChunkLayout.readLength(4, true));
    new DirectorySlot(2, 99L, slot.index(), slot.data(), entries).writeTo(plain);
    DirectorySlot p = DirectorySlot.read(plain, 4, true);
    assertArrayEquals(entries, p.entries());
    assertNull(p.checksums());

    assertThrows(
        IllegalArgumentException.class,
        () ->
            new DirectorySlot(
                2,
                99L,
                slot.index(),
                slot.data(),
                entries,
                new OutputChecksums(ChecksumAlgorithm.ADLER32, new long[] {1})),
        "one checksum per reduce partition");
  }

  @Test
  void aChecksumPointerHasItsOwnTagAndLayout() {
    RemoteRegion chunk = region(mapNode, 64);
    DirectoryPointer p = new DirectoryPointer(3, 201, true, chunk);
    String info = p.toTopologyInfo("rack1");
    assertTrue(info.startsWith("rack1|memwire3:3:201:"), info);
    DirectoryPointer back = DirectoryPointer.fromTopologyInfo(info).orElseThrow();
    assertEquals(p, back);
    assertTrue(back.checksums());
    assertEquals(ChunkLayout.readLength(201, true), back.slotReadLength());
    assertEquals(256 + 201 * 8 + 200 * 8, back.slotReadLength());
    assertEquals(3520, ChunkLayout.stride(201, true), "256 + 401 * 8, rounded up to 64");
    assertEquals(74, back.slotsPerChunk());
    assertEquals(
        5L * 3520, new DirectoryPointer(0, 201, true, region(mapNode, 1 << 20)).slotOffset(5));
    assertFalse(p.equals(new DirectoryPointer(3, 201, chunk)), "the layout differs");
    assertTrue(
        new DirectoryPointer(0, 0, true, chunk).toTopologyInfo(null).startsWith("memwire4:"),
        "headers only with checksums: the metadata layout (MetadataSlotsTest)");
  }

  private Path output(String name, long[] offsets) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(offsets.length * 8);
    for (long o : offsets) {
      b.putLong(o);
    }
    Path p = tmp.resolve(name + ".index");
    Files.write(p, b.array());
    return p;
  }

  private static void checksumFile(Path index, ChecksumAlgorithm a, long[] values)
      throws IOException {
    ByteBuffer b = ByteBuffer.allocate(values.length * 8);
    for (long v : values) {
      b.putLong(v);
    }
    Files.write(OutputChecksums.fileBeside(index, a), b.array());
  }

  private ByteBuffer read(RemoteRegion region, long offset, int length) throws Exception {
    return RegionReads.read(reader, mapNode, region, offset, length);
  }

  private DirectorySlot publishAndRead(
      ShuffleDirectory dir, int shuffle, int mapIndex, Path index, long dataBytes)
      throws Exception {
    Path data = tmp.resolve(index.getFileName() + ".data");
    Files.write(data, new byte[(int) dataBytes]);
    MemoryRegion i = mapNode.register(index, 0, Files.size(index), mapNode.memory());
    MemoryRegion d = dataBytes == 0 ? null : mapNode.register(data, 0, dataBytes, mapNode.memory());
    DirectoryPointer p = dir.publish(shuffle, mapIndex, 100L + mapIndex, i, d);
    return DirectorySlot.read(
        read(p.region(), p.slotOffset(mapIndex), p.slotReadLength()), p.entries(), p.checksums());
  }

  @Test
  void theDirectoryKeepsSparksChecksumFileOfEachAlgorithmInline() throws Exception {
    long[] offsets = {0, 5, 5, 17};
    try (ShuffleDirectory dir = new ShuffleDirectory(mapNode)) {
      int shuffle = 0;
      for (ChecksumAlgorithm a : ChecksumAlgorithm.values()) {
        Path index = output("shuffle_" + shuffle + "_100_0", offsets);
        long[] values = {a.code(), 2, 3};
        checksumFile(index, a, values);
        DirectorySlot s = publishAndRead(dir, shuffle, 0, index, 17);
        assertEquals(new OutputChecksums(a, values), s.checksums(), a.name());
        shuffle++;
      }

      // A shuffle whose first output has no checksum file: no room for checksums, unverified.
      Path bare = output("shuffle_9_100_0", offsets);
      DirectorySlot s = publishAndRead(dir, 9, 0, bare, 17);
      assertArrayEquals(offsets, s.entries());
      assertNull(s.checksums());

      // In a shuffle with checksums, an output without a file, or with a file of another
      // length, is published with its entries only (its blocks are read unverified).
      Path first = output("shuffle_10_100_0", offsets);
      checksumFile(first, ChecksumAlgorithm.ADLER32, new long[] {1, 2, 3});
      assertNotNull(publishAndRead(dir, 10, 0, first, 17).checksums());
      Path none = output("shuffle_10_101_0", offsets);
      DirectorySlot n = publishAndRead(dir, 10, 1, none, 17);
      assertArrayEquals(offsets, n.entries());
      assertNull(n.checksums());
      Path wrong = output("shuffle_10_102_0", offsets);
      checksumFile(wrong, ChecksumAlgorithm.ADLER32, new long[] {1, 2});
      DirectorySlot w = publishAndRead(dir, 10, 2, wrong, 17);
      assertArrayEquals(offsets, w.entries());
      assertNull(w.checksums());
    }
  }
}
