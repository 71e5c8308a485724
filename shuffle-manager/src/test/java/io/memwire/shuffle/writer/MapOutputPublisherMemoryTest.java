package io.memwire.shuffle.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.File;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * An executor's own output regions are units of the publisher's allocator: they go back to zero
 * when the shuffle is unregistered, and an output over a limit is refused whole.
 */
class MapOutputPublisherMemoryTest {
  @TempDir Path dir;

  /** Where {@link Resolver} places files; set by each test. */
  private static volatile Path files;

  /**
   * Spark's resolver, its files under {@link #files}. Spark 3.5 and 4 have no constructor in
   * common, so it is made without running one ({@link #resolver}); it uses no state of its own.
   */
  static final class Resolver extends IndexShuffleBlockResolver {
    Resolver() {
      super(new SparkConf(false));
    }

    @Override
    public File getIndexFile(int shuffleId, long mapId, Option<String[]> dirs) {
      return files.resolve("shuffle_" + shuffleId + "_" + mapId + ".index").toFile();
    }

    @Override
    public File getDataFile(int shuffleId, long mapId) {
      return files.resolve("shuffle_" + shuffleId + "_" + mapId + ".data").toFile();
    }
  }

  private IndexShuffleBlockResolver resolver() throws Exception {
    files = dir;
    Field f = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
    f.setAccessible(true);
    Object unsafe = f.get(null);
    return (IndexShuffleBlockResolver)
        unsafe.getClass().getMethod("allocateInstance", Class.class).invoke(unsafe, Resolver.class);
  }

  private void write(int shuffleId, long mapId, int dataBytes) throws Exception {
    ByteBuffer index = ByteBuffer.allocate(16).putLong(0).putLong(dataBytes);
    Files.write(dir.resolve("shuffle_" + shuffleId + "_" + mapId + ".index"), index.array());
    Files.write(dir.resolve("shuffle_" + shuffleId + "_" + mapId + ".data"), new byte[dataBytes]);
  }

  private static TransferNode node(long budget) {
    return TransferNode.start(
        TransferConfig.builder()
            .provider(ProviderKind.TCP)
            .bindAddress("127.0.0.1")
            .registrationBudget(budget)
            .poolMaxBytes(1 << 20)
            .build());
  }

  @Test
  void theOutputsUnitsGoBackToZeroWhenTheShuffleGoes() throws Exception {
    try (TransferNode node = node(64L << 20)) {
      ShuffleDirectory directory = new ShuffleDirectory(node);
      MapOutputPublisher p =
          new MapOutputPublisher(node, directory, resolver(), true, new ShuffleCounters(), null);
      write(3, 7, 10_000);
      write(3, 8, 20_000);
      assertNotNull(p.publishMigrated(3, 7, 0));
      assertNotNull(p.publishMigrated(3, 8, 1));
      assertEquals(2 * 16 + 30_000, p.outputs().registeredBytes());
      assertEquals(4, p.outputs().ownLiveUnits().size());
      directory.unregister(3);
      assertEquals(0, p.outputs().registeredBytes());
      assertTrue(p.outputs().ownLiveUnits().isEmpty());
      directory.close();
      assertTrue(node.memory().leakReports().isEmpty(), node.memory().leakReports().toString());
    }
  }

  @Test
  void anOutputOverTheBudgetIsRefusedWholeAndNothingStaysBooked() throws Exception {
    try (TransferNode node = node(2L << 20)) {
      ShuffleDirectory directory = new ShuffleDirectory(node);
      MapOutputPublisher p =
          new MapOutputPublisher(node, directory, resolver(), true, new ShuffleCounters(), null);
      long before = node.stats().registeredBytes();
      write(4, 9, 3 << 20);
      assertNull(p.publishMigrated(4, 9, 0), "over the budget: left to Spark");
      assertEquals(0, p.outputs().registeredBytes(), "the index region went with the refusal");
      assertEquals(before, node.stats().registeredBytes());
      directory.close();
    }
  }
}
