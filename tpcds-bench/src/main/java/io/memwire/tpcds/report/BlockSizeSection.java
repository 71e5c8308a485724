package io.memwire.tpcds.report;

import io.memwire.tpcds.run.Measurement;
import io.memwire.tpcds.run.RunResult;
import io.memwire.tpcds.run.ShuffleConfig;
import io.memwire.tpcds.worker.BlockSizes;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The sizes of the blocks read one-sided (the shuffle manager's size histogram), over every
 * execution, warm-ups included: the report's section per configuration, and {@code block-sizes.csv}
 * per configuration and query. Configurations without the manager's counters are left out.
 */
final class BlockSizeSection {
  private BlockSizeSection() {}

  /** The histogram of one configuration over {@code runs}, or null without counters. */
  private static BlockSizes sum(List<Measurement> runs) {
    if (runs.isEmpty() || runs.stream().anyMatch(m -> m.path() == null)) {
      return null;
    }
    return runs.stream().map(m -> m.path().blockSizes()).reduce(BlockSizes::plus).orElseThrow();
  }

  private static List<Measurement> of(RunResult r, String config) {
    return r.measurements().stream().filter(m -> m.config().equals(config)).toList();
  }

  static String render(RunResult r) {
    StringBuilder md = new StringBuilder();
    for (ShuffleConfig c : r.configs()) {
      BlockSizes s = sum(of(r, c.name()));
      if (s == null || s.totalBlocks() == 0) {
        continue;
      }
      if (md.length() == 0) {
        md.append(
            "\n## Sizes of the blocks read one-sided\n\n"
                + "Every execution, warm-ups included, summed over the executors' counters"
                + " (`rdmaBlockSize.<bucket>`): `le4K` is at most 4 KiB, each next bucket up to twice"
                + " the size, `gt64M` the rest. Per query: `block-sizes.csv`.\n\n"
                + "| configuration | bucket | blocks | % of blocks | MB | % of bytes |\n"
                + "|---|---|---:|---:|---:|---:|\n");
      }
      for (int i = 0; i < BlockSizes.buckets().size(); i++) {
        long blocks = s.blocks().get(i);
        if (blocks == 0) {
          continue;
        }
        long bytes = s.bytes().get(i);
        md.append("| ")
            .append(c.name())
            .append(" | ")
            .append(BlockSizes.buckets().get(i))
            .append(" | ")
            .append(blocks)
            .append(" | ")
            .append(MarkdownReport.num(100.0 * blocks / s.totalBlocks(), 1))
            .append(" | ")
            .append(MarkdownReport.num(bytes / 1e6, 1))
            .append(" | ")
            .append(MarkdownReport.num(100.0 * bytes / Math.max(1, s.totalBytes()), 1))
            .append(" |\n");
      }
    }
    return md.toString();
  }

  /** Writes {@code block-sizes.csv}: per configuration, query and non-empty bucket. */
  static void writeCsv(RunResult r, Path dir) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add("config,query,bucket,blocks,bytes");
    for (ShuffleConfig c : r.configs()) {
      Map<String, BlockSizes> byQuery = new LinkedHashMap<>();
      for (Measurement m : of(r, c.name())) {
        if (m.path() != null) {
          byQuery.merge(m.query(), m.path().blockSizes(), BlockSizes::plus);
        }
      }
      byQuery.forEach(
          (query, s) -> {
            for (int i = 0; i < BlockSizes.buckets().size(); i++) {
              if (s.blocks().get(i) != 0) {
                lines.add(
                    String.join(
                        ",",
                        c.name(),
                        query,
                        BlockSizes.buckets().get(i),
                        Objects.toString(s.blocks().get(i)),
                        Objects.toString(s.bytes().get(i))));
              }
            }
          });
    }
    Files.write(dir.resolve("block-sizes.csv"), lines, StandardCharsets.UTF_8);
  }
}
