package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.InMemoryTransport.Action;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Every timeout of a node is decided on the one clock it was built with: a fake clock far from the
 * real one drives a read timeout and the idle reaper exactly, and real time passing changes
 * nothing. Reads stamped on {@link System#nanoTime} while the reaper compared them with the
 * injected clock made a connection used "now" look hours idle.
 */
class OneClockTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private final InMemoryTransport transport = new InMemoryTransport();
  private final ManualTime time = new ManualTime();

  @AfterEach
  void tearDown() {
    transport.close();
  }

  @Test
  void aFakeClockDrivesTheReadTimeoutAndTheIdleReaper() throws Exception {
    Duration readTimeout = Duration.ofMinutes(1);
    Duration idle = Duration.ofMinutes(10);
    try (TransferNode server = transport.start(TransferConfig.defaults());
        TransferNode client =
            transport.start(
                TransferConfig.builder()
                    .readTimeout(readTimeout)
                    .connectionIdleTimeout(idle)
                    .build(),
                time)) {
      byte[] data = new byte[8192];
      ByteBuffer mem = ByteBuffer.allocateDirect(data.length);
      mem.put(data).flip();
      MemoryRegion region = TestRegions.register(server, mem);
      // The fake clock runs hours ahead of the real one from here on.
      time.advance(Duration.ofHours(5));

      // The idle reaper: a connection used now is not idle before the timeout on this clock.
      Connection c = client.connection(server.localAddress());
      c.read(ReadRequest.of(region.remote(), 0, 4096))
          .get(WAIT.toSeconds(), TimeUnit.SECONDS)
          .release();
      time.advance(idle.dividedBy(2));
      assertTrue(c.isOpen(), "reaped half-way through its idle timeout: " + client.stats());
      time.advance(idle.dividedBy(2).plusSeconds(1));
      assertFalse(c.isOpen(), "not reaped past its idle timeout");
      assertEquals(1, client.stats().connectionsReaped());

      // The read timeout: a held read is overdue only once the clock passes it.
      transport.script(r -> Action.hold());
      Connection d = client.connection(server.localAddress());
      CompletableFuture<TransferBuffer> held = d.read(ReadRequest.of(region.remote(), 0, 4096));
      transport.awaitHeld(1, WAIT);
      time.advance(readTimeout.minusSeconds(1));
      assertFalse(held.isDone(), "timed out before the read timeout on the node's clock");
      assertEquals(0, client.stats().timeouts());
      time.advance(Duration.ofSeconds(2));
      ExecutionException e =
          assertThrows(
              ExecutionException.class, () -> held.get(WAIT.toSeconds(), TimeUnit.SECONDS));
      assertInstanceOf(TransferTimeoutException.class, e.getCause());
      assertEquals(1, client.stats().timeouts());
      region.close();
    }
  }
}
