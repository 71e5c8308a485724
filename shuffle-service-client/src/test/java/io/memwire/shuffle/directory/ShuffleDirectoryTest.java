package io.memwire.shuffle.directory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.InMemoryTransport;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.LimitExceededException;
import io.memwire.transfer.memory.MemoryAllocator;
import java.nio.ByteBuffer;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The directory's chunks as units of the node's registered memory: published, read, freed. */
class ShuffleDirectoryTest {
  private static final long CHUNK_BYTES =
      (long) ShuffleDirectory.SLOTS_PER_CHUNK * DirectorySlot.SIZE;

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

  private MemoryRegion file(int bytes) {
    return TestRegions.register(mapNode, ByteBuffer.allocateDirect(bytes));
  }

  @Test
  void chunksAreUnitsReadableUntilUnregisterAndThenFreed() throws Exception {
    ShuffleDirectory dir = new ShuffleDirectory(mapNode);
    MemoryAllocator books = dir.allocator();
    assertEquals("shuffle-directory", books.name());
    DirectoryPointer p0 = dir.publish(3, 5, 77L, file(64), file(128));
    DirectoryPointer p1 = dir.publish(3, ShuffleDirectory.SLOTS_PER_CHUNK + 1, 78L, file(64), null);
    dir.publish(3, 6, 79L, file(64), null);
    assertEquals(2, books.liveUnits(), "two chunks: map indexes 5, 6 and 1025");
    assertEquals(2 * CHUNK_BYTES, books.allocatedBytes());
    assertEquals(2 * CHUNK_BYTES, mapNode.stats().memoryBytes(ShuffleDirectory.ALLOCATOR));
    assertTrue(books.toVerboseString().contains("chunk 1 of shuffle 3"), books.toVerboseString());

    TransferBuffer b =
        reader
            .connection(mapNode.localAddress())
            .read(ReadRequest.of(p0.region(), p0.slotOffset(5), DirectorySlot.SIZE))
            .get(30, TimeUnit.SECONDS);
    try {
      DirectorySlot slot = DirectorySlot.read(b.nioBuffer());
      assertEquals(77L, slot.mapId());
      assertEquals(5, slot.mapIndex());
    } finally {
      b.release();
    }

    dir.unregister(3);
    assertEquals(0, books.liveUnits(), "unregister released every chunk");
    assertEquals(0, books.allocatedBytes());
    assertEquals(2 * CHUNK_BYTES, books.peakBytes());
    ExecutionException e =
        assertThrows(
            ExecutionException.class,
            () ->
                reader
                    .connection(mapNode.localAddress())
                    .read(ReadRequest.of(p1.region(), 0, DirectorySlot.SIZE))
                    .get(30, TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof RemoteAccessException, e.getCause().toString());
    assertEquals(0, mapNode.stats().registeredRegions(), "file regions and chunks deregistered");
    dir.close();
    assertTrue(books.isClosed());
  }

  @Test
  void chunksCountAgainstTheParentsLimitAndARefusedChunkLeavesNothingRegistered() {
    MemoryAllocator app = mapNode.memory().newChild("app", 2 * CHUNK_BYTES);
    ShuffleDirectory dir = new ShuffleDirectory(mapNode, app, "app/1");
    dir.publish(1, 0, 10L, file(64), file(128));
    dir.publish(1, 1, 11L, file(64), null); // same chunk: nothing more reserved
    dir.publish(2, 0, 12L, file(64), null);
    assertEquals(2 * CHUNK_BYTES, app.registeredBytes());
    long regions = mapNode.stats().registeredRegions();
    RegistrationException e =
        assertThrows(RegistrationException.class, () -> dir.publish(3, 0, 13L, file(64), file(64)));
    LimitExceededException limit = (LimitExceededException) e.getCause();
    assertSame(app, limit.allocator(), e.getMessage());
    assertEquals(CHUNK_BYTES, limit.requested());
    assertEquals(regions, mapNode.stats().registeredRegions(), "the refused output's regions");
    assertEquals(2 * CHUNK_BYTES, app.registeredBytes());
    dir.unregister(1);
    assertEquals(
        CHUNK_BYTES, app.registeredBytes(), "an unregistered shuffle's chunk is given back");
    dir.publish(3, 0, 14L, file(64), null);
    dir.close();
    assertEquals(0, app.registeredBytes());
    assertEquals(0, mapNode.stats().registeredRegions());
    app.close();
    assertTrue(mapNode.memory().leakReports().isEmpty());
  }

  @Test
  void closeReleasesEveryShuffleAndRefusesLaterPublishes() {
    ShuffleDirectory dir = new ShuffleDirectory(mapNode);
    dir.publish(1, 0, 10L, file(64), null);
    dir.publish(2, 0, 11L, file(64), null);
    assertEquals(2, dir.allocator().liveUnits());
    dir.close();
    assertEquals(0, dir.allocator().liveUnits());
    assertTrue(dir.allocator().isClosed());
    MemoryRegion late = file(64);
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> dir.publish(1, 1, 12L, late, null));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    assertTrue(!late.isOpen(), "a refused publish closes the regions it was given");
  }
}
