package io.memwire.tpcds;

import io.memwire.transfer.fabric.FabricWindow;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * The NICs' counters over a TPC-DS run (retransmissions, out-of-sequence packets, RNR NAKs,
 * ECN/CNP, drops, errors, or that the node has no RDMA device), printed and appended to the report
 * as its "Fabric" section, so the speedups are never read without the fabric's health.
 */
final class FabricSection {
  private FabricSection() {}

  /** Prints the window's lines and appends them to {@code report} (when it exists). */
  static void append(FabricWindow fabric, Path report) throws IOException {
    List<String> lines = fabric.lines();
    lines.forEach(System.out::println);
    if (!Files.exists(report)) {
      return;
    }
    StringBuilder s =
        new StringBuilder("\n## Fabric\n\nThe NICs' own counters over the whole run (sysfs):\n\n");
    lines.forEach(l -> s.append("- ").append(l).append('\n'));
    Files.writeString(report, s, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
  }
}
