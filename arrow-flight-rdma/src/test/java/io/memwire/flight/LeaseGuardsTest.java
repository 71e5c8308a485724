package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.MemoryAllocator;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Guard slots as units of the node's registered memory: issued, revoked, recycled, closed. */
class LeaseGuardsTest {
  private final TransferNode server =
      TransferNode.start(TransferConfig.builder().provider(ProviderKind.TCP).build());
  private final TransferNode client =
      TransferNode.start(TransferConfig.builder().provider(ProviderKind.TCP).build());

  @AfterEach
  void stop() {
    client.close();
    server.close();
    assertEquals(0, server.stats().memoryBytes(), server.memory().toVerboseString());
    assertTrue(server.memory().leakReports().isEmpty(), server.memory().leakReports().toString());
  }

  private long readWord(LeaseGuards.Guard g) throws Exception {
    TransferBuffer b =
        client
            .connection(server.localAddress())
            .read(ReadRequest.of(g.region().remote(), 0, LeaseGuards.SLOT_BYTES))
            .get(10, TimeUnit.SECONDS);
    try {
      return b.nioBuffer().getLong(0);
    } finally {
      b.release();
    }
  }

  @Test
  void aGuardIsAUnitUntilItsRegionIsReleased() throws Exception {
    LeaseGuards guards = new LeaseGuards(server);
    MemoryAllocator books = guards.allocator();
    assertEquals(LeaseGuards.ALLOCATOR, books.name());
    LeaseGuards.Guard a = guards.issue();
    LeaseGuards.Guard b = guards.issue();
    assertNotEquals(a.generation, b.generation);
    assertEquals(2, books.liveUnits());
    assertEquals(2 * LeaseGuards.SLOT_BYTES, server.stats().memoryBytes(LeaseGuards.ALLOCATOR));
    assertEquals(a.generation, readWord(a));

    guards.revoke(a);
    a.region().released().get(10, TimeUnit.SECONDS);
    assertEquals(1, books.liveUnits(), "the revoked guard's unit went back");
    assertEquals(1, guards.liveRegions());
    ExecutionException e = assertThrows(ExecutionException.class, () -> readWord(a));
    assertTrue(e.getCause() instanceof RemoteAccessException, e.getCause().toString());
    guards.revoke(a); // a second revoke of the same guard changes nothing
    assertEquals(1, books.liveUnits());

    LeaseGuards.Guard c = guards.issue();
    assertEquals(2, books.liveUnits());
    guards.close(); // ends b and c
    b.region().released().get(10, TimeUnit.SECONDS);
    c.region().released().get(10, TimeUnit.SECONDS);
    assertEquals(0, books.liveUnits());
    assertTrue(books.isClosed(), "closed once the last guard region was released");
    assertEquals(0, books.directBytes(), "the page went with the last guard");
    assertEquals(0, books.registeredBytes());
    guards.revoke(b); // a lease ending after close: nothing left to do
    assertThrows(IllegalStateException.class, guards::issue);
    assertEquals(2 * LeaseGuards.SLOT_BYTES, books.peakBytes());
  }

  @Test
  void pagesAndBooksOutliveCloseUntilTheLastGuardRegionGivesItsGuardBack() {
    // A registrar whose regions run their release only when the test says: as if the transport
    // still read the slots after close.
    List<Runnable> releases = new ArrayList<>();
    Registrar slow =
        new Registrar() {
          @Override
          public MemoryAllocator memory() {
            return server.memory();
          }

          @Override
          public MemoryRegion register(ByteBuffer direct, MemoryAllocator account, Runnable r) {
            return server.register(direct, account, () -> releases.add(r));
          }

          @Override
          public MemoryRegion register(Path file, long offset, long length, MemoryAllocator a)
              throws IOException {
            return server.register(file, offset, length, a);
          }

          @Override
          public BufferUnit allocateRegistered(MemoryAllocator account, int size, String what) {
            return server.allocateRegistered(account, size, what);
          }

          @Override
          public BufferUnit allocateDirect(MemoryAllocator account, int size, String what) {
            return server.allocateDirect(account, size, what);
          }
        };
    LeaseGuards guards = new LeaseGuards(slow);
    MemoryAllocator books = guards.allocator();
    LeaseGuards.Guard a = guards.issue();
    LeaseGuards.Guard b = guards.issue();
    long page = books.directBytes();
    assertTrue(page > 0);
    guards.revoke(a);
    guards.close();
    assertEquals(2, releases.size(), "both regions closed, neither gave its guard back yet");
    assertEquals(2, books.liveUnits());
    assertEquals(page, books.directBytes(), "the page stays while a guard holds it");
    assertFalse(books.isClosed(), "the books close with their last unit");

    releases.get(1).run(); // b's region
    assertEquals(1, books.liveUnits());
    assertEquals(page, books.directBytes());
    assertFalse(books.isClosed());
    releases.get(0).run(); // a's region: the last guard, then its page, then the books
    assertEquals(0, books.liveUnits());
    assertEquals(0, books.directBytes());
    assertTrue(books.isClosed());
    assertTrue(server.memory().leakReports().isEmpty(), server.memory().leakReports().toString());
    assertFalse(b.region().isOpen());
  }
}
