package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.memwire.transfer.InMemoryTransport;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.apache.spark.network.shuffle.checksum.Cause;

/**
 * Spark's side of a read-path test: the fetch listener (the bytes of every block delivered, the
 * error of every block failed) and Spark's own client (the blocks handed over to it), all recorded;
 * its corruption diagnosis must never be asked (the writer's block manager may be gone).
 */
final class RecordingSpark extends BlockStoreClient {
  private static final Duration WAIT = Duration.ofSeconds(30);

  final Map<String, byte[]> ok = new ConcurrentHashMap<>();
  final Map<String, Throwable> failed = new ConcurrentHashMap<>();
  final Set<String> viaSpark = ConcurrentHashMap.newKeySet();

  /** The blocks delivered, in delivery order (a block delivered twice shows twice). */
  final List<String> delivered = new CopyOnWriteArrayList<>();

  /** The blocks of each call to Spark's client, in call order. */
  final List<List<String>> handedOver = new CopyOnWriteArrayList<>();

  final BlockFetchingListener listener =
      new BlockFetchingListener() {
        @Override
        public void onBlockFetchSuccess(String blockId, ManagedBuffer buf) {
          try {
            ByteBuffer b = buf.nioByteBuffer();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            ok.put(blockId, bytes);
            delivered.add(blockId);
          } catch (IOException e) {
            throw new AssertionError(e);
          }
        }

        @Override
        public void onBlockFetchFailure(String blockId, Throwable exception) {
          failed.put(blockId, exception);
        }
      };

  @Override
  public void fetchBlocks(
      String host,
      int port,
      String execId,
      String[] blockIds,
      BlockFetchingListener l,
      DownloadFileManager dfm) {
    handedOver.add(List.of(blockIds)); // first: awaitEnded watches viaSpark
    viaSpark.addAll(List.of(blockIds));
  }

  /** Waits until {@code n} blocks ended (delivered, failed or handed to Spark), each once. */
  void awaitEnded(int n) {
    awaitSettled(n);
    assertEquals(n, ok.size() + failed.size() + viaSpark.size(), "a block ended twice");
  }

  /** Waits until {@code n} blocks ended, each once, all delivered or failed, none to Spark. */
  void awaitEndedOneSided(int n) {
    awaitSettled(n);
    assertEquals(n, ok.size() + failed.size(), "a block ended twice or went to Spark");
  }

  private void awaitSettled(int n) {
    InMemoryTransport.awaitCondition(
        () -> ok.size() + failed.size() + viaSpark.size() >= n,
        WAIT,
        () ->
            "blocks ended: ok "
                + ok.keySet()
                + ", failed "
                + failed.keySet()
                + ", via Spark "
                + viaSpark);
  }

  @Override
  public Cause diagnoseCorruption(
      String host,
      int port,
      String execId,
      int shuffleId,
      long mapId,
      int reduceId,
      long checksum,
      String algorithm) {
    throw new AssertionError("the writer's block manager is gone: Spark's client asked");
  }

  @Override
  public void close() {}
}
