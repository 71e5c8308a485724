package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.MemoryAllocator;
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
    guards.revoke(b); // a lease ending after close: nothing left to do
    assertThrows(IllegalStateException.class, guards::issue);
    assertEquals(2 * LeaseGuards.SLOT_BYTES, books.peakBytes());
  }
}
