package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleCounters;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Requests issued while the reader holds them are posted only on release, in the order issued;
 * other threads' requests are never held. The blocks here have no directory route and fallback is
 * off, so posting a request fails its blocks at once on the posting thread: every step is
 * observable, in order, without a transfer node or a thread pool.
 */
class HeldRequestsTest {
  private final ShuffleCounters counters = new ShuffleCounters();
  private final ReadServices ctx = new ReadServices(null, 8, 1 << 20, false, 0, counters);
  private final RdmaBlockStoreClient client =
      new RdmaBlockStoreClient(ctx, 0, Map.of(), new UnusedClient());
  private final List<String> posted = new CopyOnWriteArrayList<>();
  private final List<String> threads = new CopyOnWriteArrayList<>();

  private final BlockFetchingListener listener =
      new BlockFetchingListener() {
        @Override
        public void onBlockFetchSuccess(String blockId, ManagedBuffer data) {
          throw new AssertionError("no block can be read here: " + blockId);
        }

        @Override
        public void onBlockFetchFailure(String blockId, Throwable exception) {
          assertTrue(
              exception.getMessage().contains("spark.shuffle.rdma.fallback=false"),
              exception.getMessage());
          posted.add(blockId);
          threads.add(Thread.currentThread().getName());
        }
      };

  @AfterEach
  void close() {
    ctx.close();
  }

  private void fetch(String... ids) {
    client.fetchBlocks("host", 1, "exec", ids, listener, null);
  }

  @Test
  void heldRequestsArePostedOnReleaseInTheOrderIssued() {
    client.holdRequests();
    fetch("shuffle_0_1_0", "shuffle_0_2_0");
    fetch("shuffle_0_3_0");
    assertEquals(List.of(), posted, "nothing may be posted while held");
    assertEquals(0, counters.failedBlocks.sum());

    client.releaseRequests();
    assertEquals(List.of("shuffle_0_1_0", "shuffle_0_2_0", "shuffle_0_3_0"), posted);
    assertEquals(3, counters.failedBlocks.sum());
    String me = Thread.currentThread().getName();
    assertEquals(List.of(me, me, me), threads, "posted by the releasing thread");

    // Not held any more: a request is posted at once.
    fetch("shuffle_0_4_0");
    assertEquals(
        List.of("shuffle_0_1_0", "shuffle_0_2_0", "shuffle_0_3_0", "shuffle_0_4_0"), posted);
  }

  @Test
  void onlyTheHoldingThreadsRequestsAreHeld() throws Exception {
    client.holdRequests();
    Thread other = new Thread(() -> fetch("shuffle_0_7_0"), "other-task");
    other.start();
    other.join(10_000);
    assertEquals(List.of("shuffle_0_7_0"), posted, "another thread's request is not held");
    assertEquals(List.of("other-task"), threads);
    client.releaseRequests();
    assertEquals(List.of("shuffle_0_7_0"), posted, "nothing was held, nothing more is posted");
  }

  @Test
  void releasingWithoutHoldingOrTwiceDoesNothing() {
    client.releaseRequests();
    client.holdRequests();
    client.releaseRequests();
    client.releaseRequests();
    fetch("shuffle_0_9_0");
    assertEquals(List.of("shuffle_0_9_0"), posted);
  }

  /** Spark's client: fallback is off, so it must never be called. */
  private static final class UnusedClient extends BlockStoreClient {
    @Override
    public void fetchBlocks(
        String host,
        int port,
        String execId,
        String[] blockIds,
        BlockFetchingListener listener,
        DownloadFileManager downloadFileManager) {
      throw new AssertionError("fallback is off");
    }

    @Override
    public void close() {}
  }
}
