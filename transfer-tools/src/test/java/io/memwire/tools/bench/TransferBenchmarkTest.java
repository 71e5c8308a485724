package io.memwire.tools.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A short run of the transfer benchmark on tcp over loopback: it measures, prints and writes. */
class TransferBenchmarkTest {
  @TempDir Path tmp;

  @Test
  void shortRunMeasuresBothSidesAndWritesCsv() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    List<TransferNode> servers = new ArrayList<>();
    List<TransferBenchmark.Point> points =
        TransferBenchmark.run(
            c -> started(servers, c),
            ProviderKind.TCP,
            "127.0.0.1",
            List.of(64 << 10),
            List.of(1, 4),
            0.2,
            1,
            true,
            false,
            out);
    assertEquals(2, points.size());
    for (TransferBenchmark.Point p : points) {
      assertTrue(p.memwireMBps > 0, "memwire MB/s " + p.memwireMBps);
      assertTrue(p.rawMBps > 0, "raw MB/s " + p.rawMBps);
      // tcp serves on the server node's I/O threads: they spend some CPU on every GiB.
      assertTrue(p.servingCpuMsPerGiB > 0, "serving ms/GiB " + p.servingCpuMsPerGiB);
    }
    assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("64K"), bytes::toString);
    Path csv = tmp.resolve("bench/transfer.csv");
    TransferBenchmark.writeCsv(csv, ProviderKind.TCP, points);
    List<String> lines = Files.readAllLines(csv, StandardCharsets.UTF_8);
    assertEquals(3, lines.size(), lines::toString);
    assertTrue(lines.get(1).startsWith("tcp,65536,1,"), lines.get(1));
    assertTrue(lines.get(0).endsWith(",serving_cpu_ms_per_gib"), lines.get(0));
    assertEquals(8, lines.get(1).split(",").length, lines.get(1));
    assertBooksEmpty(servers.get(0));
  }

  private static TransferNode started(List<TransferNode> into, TransferConfig c) {
    TransferNode n = TransferNode.start(c);
    into.add(n);
    return n;
  }

  /** The serving node closed with every unit of the benchmark's books given back. */
  private static void assertBooksEmpty(TransferNode server) {
    assertTrue(server.isClosed());
    assertEquals(0, server.memory().registeredBytes(), server.memory().toVerboseString());
    assertEquals(0, server.memory().directBytes(), server.memory().toVerboseString());
    assertTrue(server.memory().leakReports().isEmpty(), server.memory().leakReports().toString());
  }

  @Test
  void aRegionPastTheBudgetIsRefusedWholeAndNothingStaysBooked() {
    List<TransferNode> servers = new ArrayList<>();
    // The served region (64 MiB) does not fit a 32 MiB budget: refused before anything is read.
    RegistrationException e =
        assertThrows(
            RegistrationException.class,
            () ->
                TransferBenchmark.run(
                    c ->
                        started(
                            servers,
                            c.toBuilder()
                                .registrationBudget(32 << 20)
                                .poolMaxBytes(16 << 20)
                                .build()),
                    ProviderKind.TCP,
                    "127.0.0.1",
                    List.of(4 << 10),
                    List.of(1),
                    0.05,
                    1,
                    false,
                    false,
                    new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)));
    assertTrue(e.getMessage().startsWith("registration budget exhausted"), e.getMessage());
    assertBooksEmpty(servers.get(0));
  }

  @Test
  void threadCpuCountsOnlyTheThreadsStartedSinceAndNeverGoesBack() throws Exception {
    java.util.Set<Long> before = ThreadCpu.liveThreadIds();
    java.util.concurrent.CountDownLatch stop = new java.util.concurrent.CountDownLatch(1);
    Thread busy =
        new Thread(
            () -> {
              long x = 0;
              while (stop.getCount() > 0) {
                x += System.nanoTime() % 7;
              }
              assertTrue(x >= 0);
            },
            "thread-cpu-test");
    busy.setDaemon(true);
    busy.start();
    ThreadCpu cpu = ThreadCpu.startedSince(before);
    long first = cpu.nanos();
    long deadline = System.nanoTime() + 10_000_000_000L; // the busy thread gets CPU by then
    while (cpu.nanos() <= first && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    long second = cpu.nanos();
    assertTrue(second > first, first + " then " + second);
    stop.countDown();
    busy.join();
    assertTrue(cpu.nanos() >= second, "a thread that ended keeps its CPU");
    assertEquals(Double.NaN, ThreadCpu.msPerGiB(-1, 1 << 30));
    assertEquals(1000.0, ThreadCpu.msPerGiB(1_000_000_000L, 1L << 30), 1e-9);
  }

  @Test
  void parsesSizesAndNamesThem() {
    assertEquals(List.of(4096, 1 << 20), TransferBenchmark.parseSizes("4k,1m"));
    assertEquals("4K", TransferBenchmark.human(4096));
    assertEquals("1M", TransferBenchmark.human(1 << 20));
    assertEquals("100", TransferBenchmark.human(100));
  }
}
