package io.memwire.tools.model;

import io.memwire.shuffle.directory.ChunkLayout;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.transfer.settings.Units;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What Memwire costs a cluster of a given shape on an RDMA fabric: queue pairs, completion queues,
 * memory regions, pinned and metadata bytes per executor and per node, and the reads that must be
 * in flight to fill a link. The formulas follow the code (one RC queue pair per pair of transfer
 * nodes that read from each other, two regions per held map output, directory chunks as {@link
 * ShuffleDirectory} sizes them, a read pool of 4 MiB slabs); docs/COST-MODEL.md states each
 * assumption. Run {@code java -cp
 * memwire-transfer-tools.jar:memwire-block-transfer.jar:memwire-shuffle-service-client.jar
 * io.memwire.tools.model.CostModel --help}.
 */
public final class CostModel {
  /** The read pool's slab size (BufferPool). */
  static final long SLAB_BYTES = 4L << 20;

  /**
   * A cluster and a workload. All-to-all shuffles with map outputs spread evenly over executors.
   *
   * @param nodes hosts
   * @param executorsPerNode executors (transfer nodes) per host
   * @param maps map tasks per shuffle
   * @param reducers reduce partitions per shuffle
   * @param liveShuffles shuffles whose outputs are held at once
   * @param outputBytes bytes of one map output's data file
   * @param serviceMode outputs held by one shuffle service per node instead of the executors
   * @param readHostLocalDisk executors on one host read each other's files from disk (Spark's
   *     default), so only other hosts are peers
   */
  public record Shape(
      int nodes,
      int executorsPerNode,
      long maps,
      long reducers,
      int liveShuffles,
      long outputBytes,
      boolean serviceMode,
      boolean readHostLocalDisk) {}

  /**
   * Device and Memwire settings the model uses.
   *
   * @param maxQpRdAtom RDMA reads one queue pair may have outstanding (the device's)
   * @param cqEntries completion queue entries ({@code min(max_cqe, 65536)})
   * @param maxOutstandingRequests {@code maxOutstandingRequests} per connection
   * @param registrationBudget {@code registrationBudget} per transfer node
   * @param poolMaxBytes {@code poolMaxBytes}
   * @param indexCacheSize {@code indexCacheSize} per reading executor
   * @param maxSegmentSize {@code maxSegmentSize}: a data file over it is several regions
   * @param rttMicros an RDMA Read's round trip on an idle fabric, without the transfer itself
   */
  public record Limits(
      int maxQpRdAtom,
      int cqEntries,
      int maxOutstandingRequests,
      long registrationBudget,
      long poolMaxBytes,
      long indexCacheSize,
      long maxSegmentSize,
      double rttMicros) {
    /** ConnectX-class defaults and Memwire's default settings. */
    public static Limits defaults() {
      return new Limits(16, 65536, 64, 16L << 30, 256L << 20, 64L << 20, 1L << 30, 3.0);
    }
  }

  /** One quantity per transfer node that serves (executor or service) and per host. */
  public record Row(
      String quantity, double perExecutor, double perNode, String unit, String note) {}

  private CostModel() {}

  /** Peers one reading executor connects to. */
  static long readPeers(Shape s) {
    if (s.serviceMode()) {
      // One service per other host (and the own host's, unless host-local reads go to disk).
      return s.readHostLocalDisk() ? s.nodes() - 1L : s.nodes();
    }
    long all = (long) s.nodes() * s.executorsPerNode();
    return s.readHostLocalDisk() ? all - s.executorsPerNode() : all - 1;
  }

  /** The resource table of a shape. */
  public static List<Row> resources(Shape s, Limits l) {
    List<Row> rows = new ArrayList<>();
    long executors = (long) s.nodes() * s.executorsPerNode();
    int e = s.executorsPerNode();
    long peers = readPeers(s);
    // Queue pairs: a reader's to each peer; a server's from each reader that reads from it.
    long servedPerServer =
        s.serviceMode()
            ? (s.readHostLocalDisk() ? executors - e : executors)
            : (s.readHostLocalDisk() ? executors - e : executors - 1);
    long clientQpsNode = peers * e;
    long servedQpsNode = s.serviceMode() ? servedPerServer : servedPerServer * e;
    rows.add(row("client queue pairs", peers, clientQpsNode, "QP", "one per peer read from"));
    rows.add(
        row(
            "served queue pairs",
            s.serviceMode() ? 0 : servedPerServer,
            servedQpsNode,
            "QP",
            s.serviceMode() ? "all on the node's service" : "one per executor reading here"));
    long qpDepth = Math.max(1, Math.min(l.maxQpRdAtom(), l.maxOutstandingRequests()));
    long perCq = Math.max(1, l.cqEntries() / qpDepth - 1);
    long cqs = ceil(peers, perCq);
    rows.add(
        row(
            "completion queues",
            cqs,
            cqs * e + (s.serviceMode() ? 1 : 0),
            "CQ",
            perCq + " client QPs per CQ; served QPs share the first"));
    // Outputs held and their regions.
    double heldPerServer =
        s.serviceMode()
            ? (double) s.liveShuffles() * s.maps() / s.nodes()
            : (double) s.liveShuffles() * s.maps() / executors;
    long segments = Math.max(1, ceil(s.outputBytes(), l.maxSegmentSize()));
    double fileRegions = heldPerServer * (1 + segments);
    // Each directory (the executor's; the service keeps one per executor) touches at most one
    // chunk per chunk's worth of map indexes of a shuffle, and at most one per output it holds.
    // Slots carry the output's index entries inline up to MAX_INLINE_ENTRIES, so wider slots
    // mean fewer per chunk.
    int entries = s.reducers() + 1 <= DirectorySlot.MAX_INLINE_ENTRIES ? (int) s.reducers() + 1 : 0;
    int slotsPerChunk = ChunkLayout.slotsPerChunk(entries);
    long chunkBytes = (long) slotsPerChunk * ChunkLayout.stride(entries);
    long perDirectoryPerShuffle = Math.max(1, ceil(s.maps(), executors));
    double chunks =
        (double) s.liveShuffles()
            * Math.min(ceil(s.maps(), slotsPerChunk), perDirectoryPerShuffle)
            * (s.serviceMode() ? e : 1);
    double slabs = (double) l.poolMaxBytes() / SLAB_BYTES;
    double indexBytes = 8.0 * (s.reducers() + 1);
    double pinned =
        heldPerServer * (s.outputBytes() + indexBytes) + chunks * chunkBytes + l.poolMaxBytes();
    rows.add(
        row(
            "map outputs held",
            s.serviceMode() ? 0 : heldPerServer,
            s.serviceMode() ? heldPerServer : heldPerServer * e,
            "outputs",
            "live shuffles x maps / holders"));
    double regionsExec = s.serviceMode() ? slabs : fileRegions + chunks + slabs;
    double regionsNode = s.serviceMode() ? fileRegions + chunks + slabs * (e + 1) : regionsExec * e;
    rows.add(
        row(
            "memory regions",
            regionsExec,
            regionsNode,
            "MR",
            "index + data segments per output, directory chunks, pool slabs"));
    double pinnedExec =
        s.serviceMode() ? l.poolMaxBytes() : Math.min(pinned, l.registrationBudget());
    double pinnedNode =
        s.serviceMode()
            ? Math.min(pinned, l.registrationBudget()) + (double) l.poolMaxBytes() * e
            : pinnedExec * e;
    rows.add(
        row(
            "pinned bytes (verbs)",
            pinnedExec,
            pinnedNode,
            "B",
            pinned > l.registrationBudget()
                ? "over registrationBudget: outputs past it are read through Spark"
                : "held outputs + chunks + read pool, within registrationBudget"));
    rows.add(
        row(
            "directory memory",
            s.serviceMode() ? 0 : chunks * chunkBytes,
            (s.serviceMode() ? chunks : chunks * e) * chunkBytes,
            "B",
            slotsPerChunk
                + " map outputs per chunk of "
                + bytes(chunkBytes)
                + (entries == 0 ? " (slot headers only)" : " (index entries inline)")
                + ", per shuffle and directory"));
    double wanted = s.liveShuffles() * (double) s.maps() * indexBytes;
    rows.add(
        row(
            "index bytes a reader wants",
            Math.min(wanted, l.indexCacheSize()),
            Math.min(wanted, l.indexCacheSize()) * e,
            "B",
            wanted > l.indexCacheSize()
                ? "over indexCacheSize: " + bytes(wanted) + " wanted, entries read per block"
                : "whole index files cached"));
    return rows;
  }

  /** Reads in flight to keep a link of {@code gbps} busy with reads of {@code blockBytes}. */
  public static long readsInFlight(double gbps, long blockBytes, Limits l) {
    double bytesPerMicro = gbps * 1e9 / 8 / 1e6;
    // Little's law: each read occupies the pipe for its round trip plus its own transfer time.
    double perRead = l.rttMicros() + blockBytes / bytesPerMicro;
    double inFlightBytes = bytesPerMicro * perRead;
    return Math.max(1, (long) Math.ceil(inFlightBytes / blockBytes));
  }

  /** The bandwidth table: per link speed and block size, reads in flight, busy QPs, reads/s. */
  public static List<String[]> bandwidth(double[] gbps, long[] blocks, Limits l) {
    List<String[]> out = new ArrayList<>();
    long qpDepth = Math.max(1, Math.min(l.maxQpRdAtom(), l.maxOutstandingRequests()));
    for (double g : gbps) {
      for (long b : blocks) {
        long n = readsInFlight(g, b, l);
        double readsPerSecond = g * 1e9 / 8 / b;
        out.add(
            new String[] {
              fmt(g) + " Gb/s",
              bytes(b),
              Long.toString(n),
              Long.toString(ceil(n, qpDepth)),
              String.format(Locale.ROOT, "%.2f M", readsPerSecond / 1e6)
            });
      }
    }
    return out;
  }

  private static Row row(String q, double perExec, double perNode, String unit, String note) {
    return new Row(q, perExec, perNode, unit, note);
  }

  static long ceil(long a, long b) {
    return (a + b - 1) / b;
  }

  static String bytes(double b) {
    String[] u = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < u.length - 1) {
      b /= 1024;
      i++;
    }
    return String.format(Locale.ROOT, i == 0 ? "%.0f %s" : "%.1f %s", b, u[i]);
  }

  private static String fmt(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : String.format(Locale.ROOT, "%.1f", v);
  }

  private static String value(double v, String unit) {
    return unit.equals("B") ? bytes(v) : fmt(Math.ceil(v * 10) / 10);
  }

  /** The model's tables as Markdown. */
  public static String markdown(Shape s, Limits l, double[] gbps, long[] blocks) {
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "%d nodes x %d executors, %d maps x %d reducers, %d live shuffles, %s per map "
                + "output (%s per block), %s mode%n%n",
            s.nodes(),
            s.executorsPerNode(),
            s.maps(),
            s.reducers(),
            s.liveShuffles(),
            bytes(s.outputBytes()),
            bytes((double) s.outputBytes() / s.reducers()),
            s.serviceMode() ? "service" : "executor"));
    b.append("| quantity | per executor | per node | note |\n|---|---:|---:|---|\n");
    for (Row r : resources(s, l)) {
      b.append("| ")
          .append(r.quantity())
          .append(" | ")
          .append(value(r.perExecutor(), r.unit()))
          .append(" | ")
          .append(value(r.perNode(), r.unit()))
          .append(" | ")
          .append(r.note())
          .append(" |\n");
    }
    b.append(
        "\n| link | block | reads in flight | busy QPs | reads/s |\n|---|---:|---:|---:|---:|\n");
    for (String[] r : bandwidth(gbps, blocks, l)) {
      b.append("| ").append(String.join(" | ", r)).append(" |\n");
    }
    return b.toString();
  }

  /**
   * Prints the tables: {@code --nodes N --executors-per-node E --maps M --reducers R [--shuffles S]
   * [--output-bytes SIZE] [--service] [--no-host-local] [--rtt-us US] [--qp-rd-atom N] [--blocks
   * 4k,64k,1m] [--gbps 25,100,200] [--block-histogram SIZE=BLOCKS:BYTES,...]}; with a measured
   * histogram ({@link BlockHistogram}) also its distribution and what the mix needs per link.
   */
  public static void main(String[] args) {
    int nodes = 10;
    int perNode = 4;
    long maps = 2000;
    long reducers = 2000;
    int shuffles = 1;
    long outputBytes = 64L << 20;
    boolean service = false;
    boolean hostLocal = true;
    Limits d = Limits.defaults();
    double rtt = d.rttMicros();
    int rdAtom = d.maxQpRdAtom();
    long[] blocks = {4 << 10, 32 << 10, 256 << 10, 1 << 20};
    double[] gbps = {25, 100, 200};
    BlockHistogram histogram = null;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--nodes" -> nodes = Integer.parseInt(args[++i]);
        case "--executors-per-node" -> perNode = Integer.parseInt(args[++i]);
        case "--maps" -> maps = Long.parseLong(args[++i]);
        case "--reducers" -> reducers = Long.parseLong(args[++i]);
        case "--shuffles" -> shuffles = Integer.parseInt(args[++i]);
        case "--output-bytes" -> outputBytes = Units.parseBytes(args[++i]);
        case "--service" -> service = true;
        case "--no-host-local" -> hostLocal = false;
        case "--rtt-us" -> rtt = Double.parseDouble(args[++i]);
        case "--qp-rd-atom" -> rdAtom = Integer.parseInt(args[++i]);
        case "--blocks" -> {
          String[] p = args[++i].split(",");
          blocks = new long[p.length];
          for (int j = 0; j < p.length; j++) {
            blocks[j] = Units.parseBytes(p[j].trim());
          }
        }
        case "--block-histogram" -> histogram = BlockHistogram.parse(args[++i]);
        case "--gbps" -> {
          String[] p = args[++i].split(",");
          gbps = new double[p.length];
          for (int j = 0; j < p.length; j++) {
            gbps[j] = Double.parseDouble(p[j].trim());
          }
        }
        default -> {
          System.err.println(
              "usage: CostModel [--nodes N] [--executors-per-node E] [--maps M] [--reducers R]"
                  + " [--shuffles S] [--output-bytes SIZE] [--service] [--no-host-local]"
                  + " [--rtt-us US] [--qp-rd-atom N] [--blocks 4k,64k] [--gbps 25,100,200]"
                  + " [--block-histogram 4k=BLOCKS:BYTES,8k=...,>64m=...]");
          System.exit(a.equals("--help") ? 0 : 2);
        }
      }
    }
    Limits l =
        new Limits(
            rdAtom,
            d.cqEntries(),
            d.maxOutstandingRequests(),
            d.registrationBudget(),
            d.poolMaxBytes(),
            d.indexCacheSize(),
            d.maxSegmentSize(),
            rtt);
    System.out.print(
        markdown(
            new Shape(nodes, perNode, maps, reducers, shuffles, outputBytes, service, hostLocal),
            l,
            gbps,
            blocks));
    if (histogram != null) {
      System.out.print(histogram.markdown(gbps, l));
    }
  }
}
