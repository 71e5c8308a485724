package io.memwire.verbscheck;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.Connection;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.fabric.CounterDeltas;
import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.FabricDiagnosis;
import io.memwire.transfer.fabric.FabricReport;
import io.memwire.transfer.fabric.NicCounters;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.verbs.RdmaInventory;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The fabric pitfalls between two Soft-RoCE guests ({@code run-in-vm.sh --pair}): an MTU mismatch,
 * packet loss, RoCE's UDP port 4791 dropped by a firewall. Each guest serves a patterned region
 * over verbs and over tcp; the other reads it over verbs with the node's own timeouts, checks every
 * byte, and says what happened: the right result (slower, with the retransmission counters) or,
 * within the timeouts, an error naming the cause; after a failure the same bytes are read over tcp
 * (the fallback a reader has), never a hang.
 *
 * <pre>
 * FabricPitfallCheck serve DIR --bind IP --name N
 *     registers the region on a verbs and a tcp node, writes DIR/region-N-verbs.b64,
 *     DIR/region-N-tcp.b64, DIR/region-N-doctor.b64 (its first MiB; doctor --region words) and
 *     DIR/mtu-N (the port's active MTU);
 *     ends when DIR/done-N appears
 * FabricPitfallCheck read DIR --bind IP --from N --case LABEL --expect ok|retransmissions|mtu|udp4791
 *     --out FILE [--mib 16] [--read-timeout 20] [--connect-timeout 20]
 * </pre>
 *
 * <p>{@code read} appends {@code pitfall.LABEL.*} lines and {@code check.pitfall.LABEL=PASS|FAIL}
 * to FILE; exit 0 on PASS.
 */
public final class FabricPitfallCheck {
  private static final int PIECE = 1 << 20;

  private FabricPitfallCheck() {}

  /** The doctor's test pattern (transfer-tools' PeerChecks), so `doctor --peer` can read it too. */
  static byte pattern(long i) {
    return (byte) (i * 131 + 17 + (i >>> 8));
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      usage();
    }
    Map<String, String> o = new HashMap<>();
    for (int i = 2; i + 1 < args.length; i += 2) {
      o.put(args[i], args[i + 1]);
    }
    Path dir = Paths.get(args[1]);
    String bind = o.get("--bind");
    if (bind == null) {
      usage();
    }
    switch (args[0]) {
      case "serve" -> serve(dir, bind, o.getOrDefault("--name", "x"));
      case "read" -> System.exit(read(dir, bind, o) ? 0 : 1);
      default -> usage();
    }
  }

  private static void usage() {
    System.err.println(
        "usage: FabricPitfallCheck serve DIR --bind IP --name N"
            + " | read DIR --bind IP --from N --case LABEL --expect ok|retransmissions|mtu|udp4791"
            + " --out FILE [--mib N] [--read-timeout S] [--connect-timeout S]");
    System.exit(2);
  }

  private static void serve(Path dir, String bind, String name) throws Exception {
    TransferConfig base = TransferConfig.builder().bindAddress(bind).port(0).build();
    try (TransferNode verbs =
            TransferNode.start(base.toBuilder().provider(ProviderKind.VERBS).build());
        TransferNode tcp =
            TransferNode.start(base.toBuilder().provider(ProviderKind.TCP).build())) {
      BufferUnit bv = served(verbs, 16 * PIECE);
      BufferUnit bt = served(tcp, 16 * PIECE);
      // The doctor reads a whole region in one read: 1 MiB (the verbs memory's first MiB, which
      // this region holds a reference on until it is released), for emulated speeds.
      MemoryRegion rd =
          verbs.register(
              bv.buffer().limit(PIECE).slice(), bv.unit().allocator(), bv.retain()::release);
      try {
        publish(dir.resolve("region-" + name + "-verbs.b64"), encode(bv.region().remote()));
        publish(dir.resolve("region-" + name + "-tcp.b64"), encode(bt.region().remote()));
        publish(dir.resolve("region-" + name + "-doctor.b64"), encode(rd.remote()));
        OptionalInt mtu = localMtu(bind);
        publish(
            dir.resolve("mtu-" + name), mtu.isPresent() ? Integer.toString(mtu.getAsInt()) : "");
        System.out.println(
            "pitfall serve "
                + name
                + ": verbs "
                + verbs.localAddress()
                + ", tcp "
                + tcp.localAddress()
                + ", MTU "
                + (mtu.isPresent() ? mtu.getAsInt() : "unknown"));
        long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(90);
        while (!Files.exists(dir.resolve("done-" + name)) && System.nanoTime() < end) {
          Thread.sleep(200);
        }
      } finally {
        rd.close();
        bv.release();
        bt.release();
      }
    }
    System.out.println("pitfall serve " + name + ": closed");
  }

  /**
   * The pattern in {@code size} bytes of {@code node}'s registered memory, on the check's books.
   */
  private static BufferUnit served(TransferNode node, int size) {
    MemoryAllocator books = node.memory().newChild("pitfall-check");
    BufferUnit u = node.allocateRegistered(books, size, "served pattern");
    ByteBuffer b = u.buffer();
    for (int i = 0; i < size; i++) {
      b.put(i, pattern(i));
    }
    return u;
  }

  private static boolean read(Path dir, String bind, Map<String, String> o) throws Exception {
    String from = o.get("--from");
    String label = o.get("--case");
    String expect = o.get("--expect");
    Path out = Paths.get(o.get("--out"));
    int mib = Integer.parseInt(o.getOrDefault("--mib", "16"));
    Duration readTimeout =
        Duration.ofSeconds(Long.parseLong(o.getOrDefault("--read-timeout", "20")));
    Duration connectTimeout =
        Duration.ofSeconds(Long.parseLong(o.getOrDefault("--connect-timeout", "20")));
    RemoteRegion verbsRegion = decode(dir.resolve("region-" + from + "-verbs.b64"));
    RemoteRegion tcpRegion = decode(dir.resolve("region-" + from + "-tcp.b64"));
    String peerMtuText = Files.readString(dir.resolve("mtu-" + from)).trim();
    OptionalInt peerMtu =
        peerMtuText.isEmpty() ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(peerMtuText));
    OptionalInt localMtu = localMtu(bind);
    RdmaInventory.Owner owner =
        RdmaInventory.system()
            .ownerOf(InetAddress.getByName(bind))
            .orElseThrow(() -> new IllegalStateException("no RDMA port carries " + bind));
    String p = "pitfall." + label + ".";
    put(out, p + "mtus", "local " + str(localMtu) + ", peer " + str(peerMtu));
    NicCounters nic = NicCounters.system();
    CounterSample before = nic.sample();
    TransferConfig conf =
        TransferConfig.builder()
            .provider(ProviderKind.VERBS)
            .bindAddress(bind)
            .readTimeout(readTimeout)
            .connectTimeout(connectTimeout)
            .build();
    // Never a hang: every wait is bounded by the node's own timeouts and a margin.
    long bound = readTimeout.toMillis() + connectTimeout.toMillis() + 30_000;
    long t0 = System.nanoTime();
    String error = null;
    int done = 0;
    try (TransferNode node = TransferNode.start(conf)) {
      Connection c = node.connection(verbsRegion.node());
      for (; done < mib; done++) {
        if (!readAndVerify(c, verbsRegion, done, bound)) {
          error = "byte mismatch in MiB " + done;
          break;
        }
      }
    } catch (ExecutionException e) {
      error = e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
    } catch (TimeoutException e) {
      error = "HANG: no outcome within " + bound + " ms";
    } catch (Exception e) {
      error = e.getClass().getSimpleName() + ": " + e.getMessage();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    CounterDeltas d = nic.sample().since(before);
    FabricDiagnosis.Finding f =
        FabricDiagnosis.diagnose(
            d, owner.device().name(), owner.port().number(), localMtu, peerMtu, error != null);
    put(out, p + "verbs", error == null ? "read " + mib + " MiB, every byte correct" : "FAILED");
    put(out, p + "seconds", String.format(Locale.ROOT, "%.1f", seconds));
    if (error == null) {
      put(out, p + "MBps", String.format(Locale.ROOT, "%.2f", mib / seconds));
    } else {
      put(out, p + "error", error);
    }
    put(out, p + "diagnosis", f.found() ? f.message() : "none");
    List<String> lines = FabricReport.lines(d);
    for (int i = 0; i < lines.size(); i++) {
      put(out, p + "counters." + i, lines.get(i));
    }
    boolean fallbackOk = true;
    if (error != null) {
      // The reader's fallback: the same bytes over tcp (Spark's own fetch, in a job).
      long f0 = System.nanoTime();
      String fb;
      try (TransferNode tcp =
          TransferNode.start(
              TransferConfig.builder().provider(ProviderKind.TCP).bindAddress(bind).build())) {
        Connection c = tcp.connection(tcpRegion.node());
        for (int i = 0; i < mib; i++) {
          if (!readAndVerify(c, tcpRegion, i, bound)) {
            throw new IllegalStateException("byte mismatch in MiB " + i);
          }
        }
        fb =
            String.format(
                Locale.ROOT,
                "tcp: read %d MiB in %.1f s, every byte correct",
                mib,
                (System.nanoTime() - f0) / 1e9);
      } catch (Exception e) {
        fallbackOk = false;
        fb = "tcp FAILED: " + e;
      }
      put(out, p + "fallback", fb);
    }
    boolean pass =
        switch (expect) {
          case "ok" -> error == null;
          case "retransmissions" ->
              error == null && f.cause() == FabricDiagnosis.Cause.RETRANSMISSIONS;
          case "mtu" ->
              error != null
                  && !error.startsWith("HANG")
                  && error.contains("MTU mismatch")
                  // refused at connect from the peer's handshake: both MTUs, before any read stalls
                  && peerMtu.isPresent()
                  && error.contains("the peer's " + peerMtu.getAsInt())
                  && seconds < readTimeout.toSeconds()
                  && f.cause() == FabricDiagnosis.Cause.MTU_MISMATCH
                  && fallbackOk;
          case "udp4791" ->
              error != null
                  && !error.startsWith("HANG")
                  && error.contains("UDP 4791 unreachable")
                  && fallbackOk;
          default -> throw new IllegalArgumentException("--expect " + expect);
        };
    put(out, "check.pitfall." + label, pass ? "PASS" : "FAIL");
    return pass;
  }

  private static boolean readAndVerify(Connection c, RemoteRegion r, int mib, long boundMs)
      throws Exception {
    long off = (long) mib * PIECE;
    TransferBuffer buf = c.read(ReadRequest.of(r, off, PIECE)).get(boundMs, TimeUnit.MILLISECONDS);
    try {
      ByteBuffer nb = buf.nioBuffer();
      for (int i = 0; i < PIECE; i++) {
        if (nb.get(i) != pattern(off + i)) {
          return false;
        }
      }
      return true;
    } finally {
      buf.release();
    }
  }

  private static OptionalInt localMtu(String bind) throws Exception {
    return RdmaInventory.system()
        .ownerOf(InetAddress.getByName(bind))
        .map(o -> o.port().activeMtu())
        .orElse(OptionalInt.empty());
  }

  private static String str(OptionalInt v) {
    return v.isPresent() ? Integer.toString(v.getAsInt()) : "unknown";
  }

  private static String encode(RemoteRegion r) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString(r.toBytes());
  }

  private static RemoteRegion decode(Path f) throws Exception {
    return RemoteRegion.fromBytes(Base64.getUrlDecoder().decode(Files.readString(f).trim()));
  }

  private static void publish(Path f, String text) throws Exception {
    Path tmp = f.resolveSibling(f.getFileName() + ".tmp");
    Files.writeString(tmp, text + "\n");
    Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE);
  }

  private static void put(Path out, String k, String v) throws Exception {
    String line = k + "=" + v.replace('\n', ' ');
    System.out.println(line);
    Files.writeString(
        out,
        line + "\n",
        StandardCharsets.UTF_8,
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
