package io.memwire.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.TransferStats;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * The manager inside one JVM (Spark's local mode): the transport starts on first use, unregister
 * works before and after registration, stop() leaves no region, mapping, buffer or thread; bad
 * settings stop SparkContext creation with the key in the message.
 */
class LocalModeLifecycleTest {

  private static SparkSession.Builder local() {
    return SparkSession.builder()
        .master("local[2]")
        .appName("memwire-local")
        .config("spark.ui.enabled", "false")
        .config("spark.shuffle.manager", RdmaShuffleManager.class.getName());
  }

  @Test
  void unregisterAndStopReleaseEverything() throws Exception {
    SparkSession spark = local().getOrCreate();
    RdmaShuffleManager manager;
    try {
      manager = RdmaShuffleManager.current();
      assertNotNull(manager);
      assertTrue(manager.unregisterShuffle(4242), "unknown shuffle before any registration");
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<Integer> data = IntStream.range(0, 20_000).boxed().collect(Collectors.toList());
      Map<Integer, Integer> sums =
          new HashMap<>(
              jsc.parallelize(data, 4)
                  .mapToPair(x -> new Tuple2<>(x % 10, 1))
                  .reduceByKey(Integer::sum, 3)
                  .collectAsMap());
      assertEquals(10, sums.size());
      sums.values().forEach(v -> assertEquals(2000, v));
      assertTrue(manager.isTransportActive());
      assertEquals(4, manager.counters().outputsPublished.sum());
      // Four publications, each of which registers two files: some time, and not a minute.
      long publishMicros = manager.counters().publishMicros.sum();
      assertTrue(publishMicros > 0 && publishMicros < 60_000_000, "publishMicros " + publishMicros);
      TransferStats s = manager.transferStats();
      assertTrue(s.registeredRegions() >= 8, s.toString());
      assertTrue(s.mappedSegments() >= 4, s.toString());

      spark.sparkContext().cleaner().get().doCleanupShuffle(0, true);
      s = manager.transferStats();
      assertEquals(0, s.registeredRegions(), s.toString());
      assertEquals(0, s.mappedSegments(), s.toString());
      assertEquals(0, manager.stats().get(ShuffleMetrics.DIRECTORY_SHUFFLES.name()));
    } finally {
      spark.stop();
    }
    assertFalse(manager.isTransportActive());
    assertNull(RdmaShuffleManager.current());
    // A stopped manager starts nothing again: a late task of this application gets Spark's own
    // writer and reader, not the closed transport's.
    assertFalse(manager.startTransport());
    assertEquals("none (stopped)", manager.transportDescription());
    TransferStats s = manager.transferStats();
    assertEquals(0, s.registeredRegions(), s.toString());
    assertEquals(0, s.mappedSegments(), s.toString());
    assertEquals(0, s.poolBuffersOutstanding(), s.toString());
    assertEquals(0, s.memoryBytes(), "registered-memory units left (chunks, read buffers): " + s);
    assertEquals(0, s.openConnections(), s.toString());
    long deadline = System.nanoTime() + 10_000_000_000L;
    List<String> memwireThreads;
    do {
      memwireThreads =
          Thread.getAllStackTraces().keySet().stream()
              .filter(Thread::isAlive)
              .map(Thread::getName)
              .filter(n -> n.startsWith("memwire-"))
              .collect(Collectors.toList());
      if (!memwireThreads.isEmpty()) {
        Thread.sleep(50);
      }
    } while (!memwireThreads.isEmpty() && System.nanoTime() < deadline);
    assertEquals(List.of(), memwireThreads);
  }

  @Test
  void outputsBeyondTheRegistrationBudgetAreServedBySparkOrFailWhenFallbackIsOff() {
    // Each map output is about 2 MiB of incompressible bytes; the budget is 1 MiB.
    SparkSession spark =
        local()
            .config("spark.shuffle.rdma.registrationBudget", "1m")
            .config("spark.shuffle.rdma.poolMaxBytes", "1m")
            .config("spark.shuffle.compress", "false")
            .getOrCreate();
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      long n =
          jsc.parallelize(IntStream.range(0, 8).boxed().collect(Collectors.toList()), 4)
              .mapToPair(i -> new Tuple2<>(i, new byte[1 << 20]))
              .groupByKey(2)
              .count();
      assertEquals(8, n);
      RdmaShuffleManager m = RdmaShuffleManager.current();
      assertEquals(4, m.counters().outputsServedByFallback.sum());
      assertEquals(0, m.transferStats().registeredRegions());
    } finally {
      spark.stop();
    }
    SparkSession strict =
        local()
            .config("spark.shuffle.rdma.registrationBudget", "1m")
            .config("spark.shuffle.rdma.poolMaxBytes", "1m")
            .config("spark.shuffle.rdma.fallback", "false")
            .config("spark.shuffle.compress", "false")
            .getOrCreate();
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(strict.sparkContext());
      Exception e =
          assertThrows(
              Exception.class,
              () ->
                  jsc.parallelize(IntStream.range(0, 2).boxed().collect(Collectors.toList()), 1)
                      .mapToPair(i -> new Tuple2<>(i, new byte[1 << 20]))
                      .groupByKey(2)
                      .count());
      assertTrue(causes(e).contains("spark.shuffle.rdma.fallback=false"), causes(e));
      assertTrue(causes(e).contains("registration budget exhausted"), causes(e));
    } finally {
      strict.stop();
    }
  }

  @Test
  void invalidSettingStopsStartupNamingTheKey() {
    Exception e =
        assertThrows(
            Exception.class,
            () -> local().config("spark.shuffle.rdma.readBatchBytes", "1k").getOrCreate().stop());
    assertTrue(
        causes(e).contains("spark.shuffle.rdma.readBatchBytes=1k is out of range"), causes(e));
    e =
        assertThrows(
            Exception.class,
            () -> local().config("spark.shuffle.rdma.readTimout", "5s").getOrCreate().stop());
    assertTrue(
        causes(e).contains("unknown configuration key spark.shuffle.rdma.readTimout"), causes(e));
    e =
        assertThrows(
            Exception.class,
            () -> local().config("spark.shuffle.rdma.provider", "infiniband").getOrCreate().stop());
    assertTrue(causes(e).contains("spark.shuffle.rdma.provider=infiniband"), causes(e));
  }

  private static String causes(Throwable t) {
    StringBuilder sb = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      sb.append(c).append(" | ");
    }
    return sb.toString();
  }
}
