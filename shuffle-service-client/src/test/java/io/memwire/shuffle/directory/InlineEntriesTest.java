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
 * Index entries kept inline after each slot: the format (kind, count and CRC checked), the layout a
 * pointer carries, and a directory publishing real index files so a reader finds slot and entries
 * in one read at the offset the pointer gives.
 */
class InlineEntriesTest {
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

  private static long[] offsets(int partitions, int seed) {
    long[] o = new long[partitions + 1];
    for (int r = 0; r < partitions; r++) {
      o[r + 1] = o[r] + (r * 37L + seed) % 1000;
    }
    return o;
  }

  private MemoryRegion indexFile(String name, long[] offsets) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(offsets.length * 8);
    for (long o : offsets) {
      b.putLong(o);
    }
    Path p = tmp.resolve(name);
    Files.write(p, b.array());
    return mapNode.register(p, 0, Files.size(p), mapNode.memory());
  }

  private MemoryRegion dataFile(String name, long bytes) throws IOException {
    Path p = tmp.resolve(name);
    Files.write(p, new byte[(int) bytes]);
    return mapNode.register(p, 0, bytes, mapNode.memory());
  }

  private ByteBuffer read(RemoteRegion region, long offset, int length) throws Exception {
    return RegionReads.read(reader, mapNode, region, offset, length);
  }

  @Test
  void anInlineSlotDecodesOnlyAsWhatThePointerSaysAndNeverTorn() {
    RemoteRegion index = TestRegions.register(mapNode, ByteBuffer.allocateDirect(48)).remote();
    RemoteRegion data = TestRegions.register(mapNode, ByteBuffer.allocateDirect(4000)).remote();
    long[] entries = {0, 100, 100, 3000, 4000, 4000};
    ByteBuffer b = ByteBuffer.allocate(ChunkLayout.readLength(entries.length));
    new DirectorySlot(9, 1234L, index, data, entries).writeTo(b);

    DirectorySlot slot = DirectorySlot.read(b, entries.length);
    assertNotNull(slot);
    assertEquals(1234L, slot.mapId());
    assertEquals(9, slot.mapIndex());
    assertArrayEquals(entries, slot.entries());
    assertEquals(data, slot.data());
    assertNull(slot.withoutEntries().entries());

    assertNull(DirectorySlot.read(b, 0), "an inline slot where headers only are expected");
    assertNull(DirectorySlot.read(b, entries.length + 1), "another entry count");
    assertNull(DirectorySlot.read(b.duplicate().limit(300), entries.length), "short read");
    assertNotNull(DirectorySlot.read(b), "the header alone decodes (tools, service tests)");
    assertNull(DirectorySlot.read(b).entries());

    ByteBuffer torn = ByteBuffer.allocate(b.capacity()).put(b.duplicate()).flip();
    torn.putLong(DirectorySlot.SIZE + 3 * 8, 2999); // an entry of another output
    assertNull(DirectorySlot.read(torn, entries.length), "entries not matching the CRC");
    ByteBuffer otherId = ByteBuffer.allocate(b.capacity()).put(b.duplicate()).flip();
    otherId.putLong(8, 1235L); // a header of another output
    assertNull(DirectorySlot.read(otherId, entries.length), "a header not matching the CRC");

    ByteBuffer legacy = ByteBuffer.allocate(DirectorySlot.SIZE);
    new DirectorySlot(9, 1234L, index, data).writeTo(legacy);
    DirectorySlot header = DirectorySlot.read(legacy, entries.length);
    assertNotNull(header, "a header-only slot is valid in a directory with inline entries");
    assertNull(header.entries());
    assertNotNull(DirectorySlot.read(legacy, 0));
  }

  @Test
  void thePointerCarriesTheLayoutAndParsesBothVersions() {
    RemoteRegion chunk = TestRegions.register(mapNode, ByteBuffer.allocateDirect(1 << 18)).remote();
    DirectoryPointer inline = new DirectoryPointer(2, 201, chunk);
    String info = inline.toTopologyInfo("rack1");
    assertTrue(info.startsWith("rack1|memwire2:2:201:"), info);
    assertEquals(inline, DirectoryPointer.fromTopologyInfo(info).orElseThrow());
    assertEquals(1920, ChunkLayout.stride(201), "256 + 201 * 8, rounded up to 64");
    assertEquals(136, inline.slotsPerChunk());
    assertEquals((274 - 272) * 1920L, inline.slotOffset(274));
    assertEquals(-1, inline.slotOffset(271), "in chunk 1");
    assertEquals(256 + 201 * 8, inline.slotReadLength());

    DirectoryPointer legacy = new DirectoryPointer(1, chunk);
    String old = legacy.toTopologyInfo(null);
    assertTrue(old.startsWith("memwire1:1:"), old);
    assertEquals(legacy, DirectoryPointer.fromTopologyInfo(old).orElseThrow());
    assertEquals(5L * DirectorySlot.SIZE, legacy.slotOffset(1029));
    assertFalse(DirectoryPointer.fromTopologyInfo("memwire2:1:0:" + old.substring(11)).isPresent());
    assertThrows(
        IllegalArgumentException.class,
        () -> new DirectoryPointer(0, DirectorySlot.MAX_INLINE_ENTRIES + 1, chunk));
  }

  @Test
  void publishedIndexFilesAreReadInlineWithTheirSlot() throws Exception {
    int partitions = 200;
    int spc = ChunkLayout.slotsPerChunk(partitions + 1);
    try (ShuffleDirectory dir = new ShuffleDirectory(mapNode)) {
      long[] first = offsets(partitions, 1);
      DirectoryPointer p0 =
          dir.publish(4, 3, 70L, indexFile("a.index", first), dataFile("a.data", first[200]));
      long[] second = offsets(partitions, 2);
      DirectoryPointer p1 =
          dir.publish(4, spc + 1, 71L, indexFile("b.index", second), dataFile("b.data", 5));
      assertEquals(partitions + 1, p0.entries());
      assertEquals(1, p1.chunk(), "map index " + (spc + 1) + " is in the second chunk");
      assertEquals(2L * spc * ChunkLayout.stride(partitions + 1), dir.allocator().allocatedBytes());

      DirectorySlot s0 =
          DirectorySlot.read(read(p0.region(), p0.slotOffset(3), p0.slotReadLength()), 201);
      assertEquals(70L, s0.mapId());
      assertArrayEquals(first, s0.entries());
      DirectorySlot s1 =
          DirectorySlot.read(read(p1.region(), p1.slotOffset(spc + 1), p1.slotReadLength()), 201);
      assertEquals(71L, s1.mapId());
      assertArrayEquals(second, s1.entries());

      // An index of another length (never from Spark's partitioner) gets a header only.
      MemoryRegion shortIndex = indexFile("c.index", offsets(10, 3));
      DirectoryPointer p2 = dir.publish(4, 5, 72L, shortIndex, dataFile("c.data", 100));
      DirectorySlot s2 =
          DirectorySlot.read(read(p2.region(), p2.slotOffset(5), p2.slotReadLength()), 201);
      assertEquals(72L, s2.mapId());
      assertNull(s2.entries());
      assertEquals(shortIndex.remote(), s2.index());

      // Published again under another map id (a rerun of map index 3): readers holding the old
      // id see the slot name the new one, whole, so they can tell it is stale.
      dir.publish(4, 3, -1L, indexFile("a2.index", first), dataFile("a2.data", first[200]));
      DirectorySlot rerun =
          DirectorySlot.read(read(p0.region(), p0.slotOffset(3), p0.slotReadLength()), 201);
      assertEquals(-1L, rerun.mapId());
      assertArrayEquals(first, rerun.entries());

      MemoryRegion wide = indexFile("w.index", offsets(DirectorySlot.MAX_INLINE_ENTRIES, 4));
      DirectoryPointer pw = dir.publish(5, 0, 80L, wide, null);
      assertEquals(0, pw.entries(), "too many partitions for inline entries: headers only");
    }
  }
}
