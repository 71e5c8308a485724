package io.memwire.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/**
 * Closing a producer or a client from several threads at once runs the close body once, and every
 * close returns only once it has finished (what it releases is released when any close returns).
 * Each is built with a close listener ({@code onClosed}, run at the end of the body) that counts.
 */
class ConcurrentCloseTest {
  private static final int CLOSERS = 8;

  /**
   * Runs {@code close} on {@value #CLOSERS} threads released together; after each returns, {@code
   * after} must hold.
   */
  private static void closeAtOnce(Runnable close, Runnable after) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(CLOSERS);
    try {
      CountDownLatch ready = new CountDownLatch(CLOSERS);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> done = new ArrayList<>();
      for (int i = 0; i < CLOSERS; i++) {
        done.add(
            pool.submit(
                () -> {
                  ready.countDown();
                  go.await();
                  close.run();
                  after.run();
                  return null;
                }));
      }
      assertTrue(ready.await(30, TimeUnit.SECONDS), "closer threads did not start");
      go.countDown();
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS); // rethrows an assertion a closer failed
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    }
  }

  @Test
  void producerClosedFromManyThreadsRunsItsBodyOnce() throws Exception {
    try (RootAllocator root = new RootAllocator();
        TransferNode node =
            TransferNode.start(TransferConfig.builder().provider(ProviderKind.TCP).build())) {
      BufferAllocator parent = root.newChildAllocator("parent", 0, Long.MAX_VALUE);
      for (int round = 0; round < 5; round++) {
        AtomicInteger bodies = new AtomicInteger();
        RdmaFlightProducer.Builder b =
            RdmaFlightProducer.builder(new NoOpFlightProducer(), node, parent)
                .registeredMemory(1L << 20, 8L << 20);
        b.onClosed = bodies::incrementAndGet;
        AtomicReference<ServerResources> opened = new AtomicReference<>();
        b.onOpened = opened::set;
        RdmaFlightProducer p = b.build();
        closeAtOnce(
            p::close,
            () -> {
              assertEquals(
                  1, bodies.get(), "the close body ran to its end before any close returned");
              assertEquals(0, parent.getChildAllocators().size(), "message allocator closed");
              assertTrue(opened.get().leaseRegions().isClosed(), "lease books closed");
            });
        assertEquals(1, bodies.get(), "close body runs once");
        p.close();
        assertEquals(1, bodies.get(), "a later close does nothing");
      }
      assertEquals(0, parent.getAllocatedMemory());
      parent.close();
    }
  }

  @Test
  void clientClosedFromManyThreadsRunsItsBodyOnce() throws Exception {
    try (RootAllocator root = new RootAllocator();
        FlightClient flight =
            FlightClient.builder(root, Location.forGrpcInsecure("127.0.0.1", 1)).build()) {
      for (int round = 0; round < 5; round++) {
        AtomicInteger bodies = new AtomicInteger();
        RdmaFlightClient.Builder b =
            RdmaFlightClient.builder(flight, root)
                .transferConfig(TransferConfig.builder().provider(ProviderKind.TCP).build());
        b.onClosed = bodies::incrementAndGet;
        RdmaFlightClient c = b.build();
        closeAtOnce(
            c::close,
            () -> {
              assertEquals(
                  1, bodies.get(), "the close body ran to its end before any close returned");
              assertTrue(c.executor().isShutdown(), "threads stopped");
              assertThrows(IllegalStateException.class, () -> c.getStream(new Ticket(new byte[1])));
            });
        assertEquals(1, bodies.get(), "close body runs once");
        c.close();
        assertEquals(1, bodies.get(), "a later close does nothing");
      }
    }
  }
}
