package io.memwire.verbscheck;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.Connection;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.TransferTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A peer whose JVM exits while another reads from it, over verbs: reads must then fail with a
 * connection error, promptly, never hang and never time out. Two processes sharing a directory:
 *
 * <pre>
 * PeerExitCheck serve DIR --bind IP              (registers 16 MiB, publishes it, waits for
 *                                                  DIR/exit, then halts without closing anything)
 * PeerExitCheck read DIR --bind IP --out FILE    (reads and verifies 1 MiB pieces; after three
 *                                                  creates DIR/exit and reads on until one fails)
 * </pre>
 *
 * <p>{@code read} writes {@code check.peerExit=PASS|FAIL} and figures to FILE; exit 0 on PASS.
 */
public final class PeerExitCheck {
  private static final int SIZE = 16 << 20;
  private static final int PIECE = 1 << 20;

  /** Longer than anything a dead peer should take to be noticed, shorter than the read timeout. */
  private static final Duration READ_TIMEOUT = Duration.ofMinutes(10);

  private static final Duration FAIL_WITHIN = Duration.ofMinutes(5);

  private PeerExitCheck() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 4 || !args[2].equals("--bind")) {
      usage();
    }
    Path dir = Paths.get(args[1]);
    TransferConfig conf =
        TransferConfig.builder()
            .provider(ProviderKind.VERBS)
            .bindAddress(args[3])
            .connectTimeout(Duration.ofMinutes(5))
            .readTimeout(READ_TIMEOUT)
            .build();
    switch (args[0]) {
      case "serve" -> serve(dir, conf);
      case "read" -> {
        if (args.length != 6 || !args[4].equals("--out")) {
          usage();
        }
        System.exit(read(dir, conf, Paths.get(args[5])) ? 0 : 1);
      }
      default -> usage();
    }
  }

  private static void usage() {
    System.err.println("usage: PeerExitCheck serve DIR --bind IP | read DIR --bind IP --out FILE");
    System.exit(2);
  }

  private static byte expected(long i) {
    return (byte) (i * 31 + (i >>> 11));
  }

  private static void serve(Path dir, TransferConfig conf) throws Exception {
    TransferNode node = TransferNode.start(conf);
    // The node's memory, on the check's own books; this process halts with it registered.
    BufferUnit unit =
        node.allocateRegistered(node.memory().newChild("peer-exit-check"), SIZE, "served region");
    ByteBuffer b = unit.buffer();
    for (int i = 0; i < SIZE; i++) {
      b.put(i, expected(i));
    }
    MemoryRegion r = unit.region();
    Path tmp = dir.resolve("region.tmp");
    Files.write(tmp, r.remote().toBytes());
    Files.move(tmp, dir.resolve("region.bin"), StandardCopyOption.ATOMIC_MOVE);
    System.out.println("peer-exit serve: published " + r + " on " + node.provider());
    long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(30);
    while (!Files.exists(dir.resolve("exit")) && System.nanoTime() < end) {
      Thread.sleep(50);
    }
    System.out.println("peer-exit serve: halting with the region registered and peers connected");
    Runtime.getRuntime().halt(0);
  }

  private static boolean read(Path dir, TransferConfig conf, Path out) throws Exception {
    Path published = dir.resolve("region.bin");
    long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(20);
    while (!Files.exists(published)) {
      if (System.nanoTime() > end) {
        throw new IllegalStateException(published + " did not appear within 20 minutes");
      }
      Thread.sleep(100);
    }
    RemoteRegion region = RemoteRegion.fromBytes(Files.readAllBytes(published));
    int ok = 0;
    String outcome;
    boolean pass;
    long exitAt = 0;
    try (TransferNode node = TransferNode.start(conf)) {
      Connection c = node.connection(region.node());
      while (true) {
        long off = (long) (ok % (SIZE / PIECE)) * PIECE;
        TransferBuffer buf;
        try {
          buf =
              c.read(ReadRequest.of(region, off, PIECE))
                  .get(READ_TIMEOUT.toMillis() + 60_000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          double after = exitAt == 0 ? -1 : (System.nanoTime() - exitAt) / 1e9;
          boolean connection = cause instanceof TransferConnectionException;
          boolean timeout = cause instanceof TransferTimeoutException;
          pass = exitAt != 0 && connection && !timeout && after < FAIL_WITHIN.toSeconds();
          outcome =
              String.format(
                  Locale.ROOT,
                  "reads before the exit %d; failed %.1f s after "
                      + "the peer was told to exit with %s",
                  Math.min(ok, 3),
                  after,
                  cause);
          append(out, "peerExit.failSeconds", String.format(Locale.ROOT, "%.1f", after));
          break;
        } catch (java.util.concurrent.TimeoutException e) {
          pass = false;
          outcome = "a read hung for longer than the read timeout after the peer exited";
          break;
        }
        try {
          ByteBuffer nb = buf.nioBuffer();
          for (int i = 0; i < PIECE; i++) {
            if (nb.get(i) != expected(off + i)) {
              throw new IllegalStateException("byte " + (off + i) + " differs");
            }
          }
        } finally {
          buf.release();
        }
        ok++;
        if (ok == 3) {
          Files.createFile(dir.resolve("exit"));
          exitAt = System.nanoTime();
        }
        if (exitAt != 0 && System.nanoTime() - exitAt > FAIL_WITHIN.toNanos()) {
          pass = false;
          outcome = ok + " reads still succeeded " + FAIL_WITHIN + " after the peer exited";
          break;
        }
      }
    }
    append(out, "check.peerExit", pass ? "PASS" : "FAIL");
    append(out, "detail.peerExit", outcome);
    System.out.println("peer-exit read: " + (pass ? "PASS " : "FAIL ") + outcome);
    return pass;
  }

  private static void append(Path out, String k, String v) throws Exception {
    Files.writeString(
        out,
        k + "=" + v.replace('\n', ' ') + "\n",
        StandardCharsets.UTF_8,
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
