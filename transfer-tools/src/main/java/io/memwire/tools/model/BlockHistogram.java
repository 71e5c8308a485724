package io.memwire.tools.model;

import io.memwire.transfer.settings.Units;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A measured distribution of block sizes (the shuffle manager's {@code rdmaBlockSize} counters: per
 * size bucket, blocks and their bytes) and what it means for a link: by Little's law a mix of
 * blocks needs the reads in flight of one block of the mix's mean size (total bytes over total
 * blocks), and its read rate is the link rate over that mean.
 *
 * @param buckets the non-empty buckets, smallest first
 */
public record BlockHistogram(List<Bucket> buckets) {
  /**
   * One size bucket.
   *
   * @param upTo the largest block size it holds (for the last bucket, the smallest it holds)
   * @param last whether it is the open-ended last bucket ({@code >upTo})
   * @param blocks blocks in it
   * @param bytes their bytes
   */
  public record Bucket(long upTo, boolean last, long blocks, long bytes) {}

  /** Checks there is a block. */
  public BlockHistogram {
    buckets = List.copyOf(buckets);
    if (buckets.stream().mapToLong(Bucket::blocks).sum() <= 0) {
      throw new IllegalArgumentException("--block-histogram holds no block");
    }
  }

  /**
   * Parses {@code SIZE=BLOCKS:BYTES,...}: {@code SIZE} a bucket's largest block size ({@code 4k},
   * {@code 1m}) or {@code >SIZE} for the open-ended last one, as the TPC-DS runner's {@code
   * block-sizes.csv} sums them ({@code le4K} is {@code 4k}, {@code gt64M} is {@code >64m}).
   *
   * @throws IllegalArgumentException naming the item that does not parse
   */
  public static BlockHistogram parse(String spec) {
    List<Bucket> out = new ArrayList<>();
    for (String item : spec.split(",")) {
      String s = item.trim();
      try {
        int eq = s.indexOf('=');
        int colon = s.indexOf(':', eq);
        boolean last = s.startsWith(">");
        long upTo = Units.parseBytes(s.substring(last ? 1 : 0, eq));
        long blocks = Long.parseLong(s.substring(eq + 1, colon).trim());
        long bytes = Long.parseLong(s.substring(colon + 1).trim());
        if (blocks < 0 || bytes < 0) {
          throw new IllegalArgumentException("negative");
        }
        out.add(new Bucket(upTo, last, blocks, bytes));
      } catch (RuntimeException e) {
        throw new IllegalArgumentException(
            "--block-histogram: '" + s + "' is not SIZE=BLOCKS:BYTES (for example 4k=120:300000)",
            e);
      }
    }
    out.sort((a, b) -> a.last() != b.last() ? (a.last() ? 1 : -1) : Long.compare(a.upTo, b.upTo));
    return new BlockHistogram(out);
  }

  /** Blocks over every bucket. */
  public long blocks() {
    return buckets.stream().mapToLong(Bucket::blocks).sum();
  }

  /** Bytes over every bucket. */
  public long bytes() {
    return buckets.stream().mapToLong(Bucket::bytes).sum();
  }

  /** The mean block: total bytes over total blocks (at least one byte). */
  public long meanBlock() {
    return Math.max(1, Math.round((double) bytes() / blocks()));
  }

  /** The distribution, then per link the mix's reads in flight and read rate, as Markdown. */
  public String markdown(double[] gbps, CostModel.Limits l) {
    StringBuilder b =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "%nMeasured block sizes: %,d blocks, %s, mean %s%n%n"
                    + "| blocks of | blocks | %% of reads | %% of bytes |%n|---|---:|---:|---:|%n",
                blocks(),
                CostModel.bytes(bytes()),
                CostModel.bytes(meanBlock())));
    for (Bucket k : buckets) {
      if (k.blocks() == 0) {
        continue;
      }
      b.append(
          String.format(
              Locale.ROOT,
              "| %s %s | %,d | %.1f | %.1f |%n",
              k.last() ? ">" : "≤",
              CostModel.bytes(k.upTo()),
              k.blocks(),
              100.0 * k.blocks() / blocks(),
              100.0 * k.bytes() / Math.max(1, bytes())));
    }
    b.append(
        "\n| link | mix of | reads in flight | busy QPs | reads/s |\n|---|---:|---:|---:|---:|\n");
    for (String[] r : CostModel.bandwidth(gbps, new long[] {meanBlock()}, l)) {
      r[1] = "mean " + r[1];
      b.append("| ").append(String.join(" | ", r)).append(" |\n");
    }
    return b.toString();
  }
}
