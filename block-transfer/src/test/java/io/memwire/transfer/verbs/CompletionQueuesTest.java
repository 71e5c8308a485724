package io.memwire.transfer.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.Test;

/**
 * How the verbs provider places client queue pairs on completion queues, without a device: sized
 * from {@code max_cqe}, a new queue when all are full, emptied extra queues closed, and a clear
 * refusal at the hard limit.
 */
class CompletionQueuesTest {

  /** A completion queue that only records whether it was closed. */
  private static final class FakeQueue implements CompletionQueues.Queue {
    final int index;
    boolean closed;

    FakeQueue(int index) {
      this.index = index;
    }

    @Override
    public void close() {
      assertFalse(closed, "closed twice");
      closed = true;
    }
  }

  /** Runs closes when the test says so, like the provider's connector thread. */
  private static final class ManualExecutor implements Executor {
    final Queue<Runnable> tasks = new ArrayDeque<>();
    boolean shutdown;

    @Override
    public void execute(Runnable r) {
      if (shutdown) {
        throw new RejectedExecutionException("shut down");
      }
      tasks.add(r);
    }

    void runAll() {
      Runnable r;
      while ((r = tasks.poll()) != null) {
        r.run();
      }
    }
  }

  private final List<FakeQueue> created = new ArrayList<>();
  private final List<FakeQueue> counted = new ArrayList<>();
  private final ManualExecutor closer = new ManualExecutor();

  private CompletionQueues<FakeQueue> queues(int perQueue, int maxQueues) throws Exception {
    CompletionQueues<FakeQueue> q =
        new CompletionQueues<>(
            perQueue,
            maxQueues,
            i -> {
              FakeQueue f = new FakeQueue(i);
              created.add(f);
              return f;
            },
            closer,
            counted::add);
    q.openFirst();
    return q;
  }

  @Test
  void entriesComeFromTheDeviceAndAlwaysHoldOneQueuePair() {
    assertEquals(32767, QueueSizing.cqEntries(null, 32767, 64), "rxe: its max_cqe");
    assertEquals(QueueSizing.DEFAULT_CQ_ENTRIES, QueueSizing.cqEntries(null, 4194303, 16), "mlx5");
    assertEquals(1000, QueueSizing.cqEntries(1000, 4194303, 16), "memwire.verbs.cqEntries");
    assertEquals(4096, QueueSizing.cqEntries(1 << 20, 4096, 16), "never above max_cqe");
    assertEquals(64, QueueSizing.cqEntries(8, 32767, 64), "one queue pair fits at least");
    assertEquals(510, QueueSizing.queuePairsPerQueue(32767, 64), "rxe at depth 64");
    assertEquals(4095, QueueSizing.queuePairsPerQueue(65536, 16), "a NIC at depth 16");
    assertEquals(1, QueueSizing.queuePairsPerQueue(64, 64), "at least one");
    assertEquals(1, QueueSizing.queuePairsPerQueue(127, 64), "at least one");
    assertEquals(64, QueueSizing.maxQueues(64, DeviceLimits.UNKNOWN));
    assertEquals(10, QueueSizing.maxQueues(64, 10), "the device's max_cq caps it");
  }

  @Test
  void deviceLimitsIncludeMaxCq() {
    DeviceLimits l =
        DeviceLimits.parse(
            "hca_id:\tmlx5_0\n\tmax_qp:\t\t\t262144\n\tmax_cq:\t\t\t16777216\n"
                + "\tmax_cqe:\t\t\t4194303\n\tmax_qp_rd_atom:\t\t\t16\n",
            "test");
    assertEquals(16777216, l.maxCq);
    assertEquals(4194303, l.maxCqe, "max_cq is not mistaken for max_cqe or the reverse");
    assertEquals(16, l.maxQpRdAtom);
    assertEquals(
        DeviceLimits.UNKNOWN,
        DeviceLimits.parse("\tmax_cqe:\t32767\n\tmax_qp_rd_atom:\t128\n", "t").maxCq);
  }

  @Test
  void aFullQueueGetsANeighbourAndEmptiedExtraQueuesClose() throws Exception {
    CompletionQueues<FakeQueue> q = queues(2, 8);
    List<CompletionQueues<FakeQueue>.Slot> slots = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      slots.add(q.acquire());
    }
    assertEquals(3, q.queues(), "5 queue pairs of 2 per queue");
    assertEquals(5, q.queuePairs());
    assertSame(created.get(0), slots.get(0).queue());
    assertSame(created.get(0), slots.get(1).queue());
    assertSame(created.get(1), slots.get(2).queue());
    assertSame(created.get(2), slots.get(4).queue());

    // Freed places are reused lowest first, so extra queues drain.
    q.release(slots.get(0));
    q.release(slots.get(0)); // a second release of one place is a no-op
    assertSame(created.get(0), q.acquire().queue());
    q.release(slots.get(4));
    assertEquals(2, q.queues(), "the emptied third queue is out of use at once");
    assertFalse(created.get(2).closed, "closed on the closer, not the releasing thread");
    closer.runAll();
    assertTrue(created.get(2).closed);
    assertEquals(List.of(created.get(2)), counted, "its counters were kept");
    assertEquals(3, q.opened());
    assertEquals(1, q.closed());

    // A new queue after that is a fresh one, never the closed one.
    q.acquire();
    CompletionQueues<FakeQueue>.Slot another = q.acquire();
    assertSame(created.get(3), another.queue());
    assertEquals(3, q.peakQueues());
  }

  @Test
  void theFirstQueueStaysOpenWhenEmpty() throws Exception {
    CompletionQueues<FakeQueue> q = queues(1, 4);
    CompletionQueues<FakeQueue>.Slot a = q.acquire();
    q.release(a);
    closer.runAll();
    assertFalse(created.get(0).closed, "served queue pairs live on the first queue");
    assertEquals(1, q.queues());
    assertSame(created.get(0), q.first());
  }

  @Test
  void beyondTheLastQueueTheRefusalSaysWhy() throws Exception {
    CompletionQueues<FakeQueue> q = queues(2, 2);
    List<CompletionQueues<FakeQueue>.Slot> slots = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      slots.add(q.acquire());
    }
    CompletionQueues.LimitReachedException e =
        assertThrows(CompletionQueues.LimitReachedException.class, q::acquire);
    assertTrue(
        e.getMessage().contains("4 queue pairs fill all 2 completion queues of 2"), e.getMessage());
    q.release(slots.get(3));
    q.acquire(); // room again
  }

  @Test
  void closeClosesEveryQueueIncludingOnesTheCloserRefused() throws Exception {
    CompletionQueues<FakeQueue> q = queues(1, 4);
    CompletionQueues<FakeQueue>.Slot a = q.acquire();
    CompletionQueues<FakeQueue>.Slot b = q.acquire();
    closer.shutdown = true; // the provider is closing: its connector takes no more work
    q.release(b);
    q.release(a);
    assertFalse(created.get(1).closed);
    q.close();
    for (FakeQueue f : created) {
      assertTrue(f.closed, "queue " + f.index + " left open");
    }
    assertThrows(java.io.IOException.class, q::acquire);
    q.close(); // idempotent
  }
}
