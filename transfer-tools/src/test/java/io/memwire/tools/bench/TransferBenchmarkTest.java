package io.memwire.tools.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
    List<TransferBenchmark.Point> points =
        TransferBenchmark.run(
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
    }
    assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("64K"), bytes::toString);
    Path csv = tmp.resolve("bench/transfer.csv");
    TransferBenchmark.writeCsv(csv, ProviderKind.TCP, points);
    List<String> lines = Files.readAllLines(csv, StandardCharsets.UTF_8);
    assertEquals(3, lines.size(), lines::toString);
    assertTrue(lines.get(1).startsWith("tcp,65536,1,"), lines.get(1));
  }

  @Test
  void parsesSizesAndNamesThem() {
    assertEquals(List.of(4096, 1 << 20), TransferBenchmark.parseSizes("4k,1m"));
    assertEquals("4K", TransferBenchmark.human(4096));
    assertEquals("1M", TransferBenchmark.human(1 << 20));
    assertEquals("100", TransferBenchmark.human(100));
  }
}
