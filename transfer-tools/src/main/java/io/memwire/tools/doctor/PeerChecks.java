package io.memwire.tools.doctor;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The two-node check: {@code --serve} starts a node with a test region filled with a known pattern
 * and prints its descriptor; {@code --peer} on another node opens a real connection to it and reads
 * the whole region one-sidedly, comparing every byte with the pattern.
 */
final class PeerChecks {
  private PeerChecks() {}

  /** The test pattern's byte at {@code i}: position dependent, so misplaced bytes show. */
  static byte pattern(long i) {
    return (byte) (i * 131 + 17 + (i >>> 8));
  }

  static ByteBuffer patternBuffer(int size) {
    return fill(ByteBuffer.allocateDirect(size));
  }

  /** Writes the pattern over the buffer's capacity. */
  static ByteBuffer fill(ByteBuffer b) {
    for (int i = 0; i < b.capacity(); i++) {
      b.put(i, pattern(i));
    }
    return b;
  }

  /** The encoded descriptor as one command-line word. */
  static String encode(RemoteRegion r) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString(r.toBytes());
  }

  static RemoteRegion decode(String s) {
    try {
      return RemoteRegion.fromBytes(Base64.getUrlDecoder().decode(s.trim()));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "--region "
              + s
              + " is not a region descriptor printed by "
              + "`doctor --serve`: "
              + e.getMessage(),
          e);
    }
  }

  /**
   * Serves a test region until {@code duration} passes or the thread is interrupted; prints the
   * descriptor and the command to run on the other node.
   */
  static void serve(TransferConfig config, int size, Duration duration, PrintStream out)
      throws InterruptedException {
    try (TransferNode node = TransferNode.start(config)) {
      // Released before the node closes: the node frees it once its region is released.
      BufferUnit memory = node.allocateRegistered(node.memory(), size, "doctor test region");
      fill(memory.buffer());
      MemoryRegion region = memory.region();
      String d = encode(region.remote());
      out.println(
          "serving a "
              + size
              + "-byte test region over "
              + node.provider()
              + " on "
              + node.localAddress().getAddress().getHostAddress()
              + ":"
              + node.localAddress().getPort()
              + " ("
              + node.selectionReason()
              + ")");
      out.println("region " + d);
      out.println(
          "on the other node run: memwire doctor --peer "
              + node.localAddress().getAddress().getHostAddress()
              + ":"
              + node.localAddress().getPort()
              + " --region "
              + d);
      out.flush();
      try {
        Thread.sleep(duration.toMillis());
      } finally {
        memory.release();
      }
    }
  }

  /** Connects to {@code peer} and, when a region is given, reads it all and checks the bytes. */
  static Check peer(TransferConfig base, InetSocketAddress peer, RemoteRegion region) {
    String name = "peer";
    TransferConfig config = base;
    if (region != null) {
      RegionDescriptor d = region.segments().get(0);
      if (!d.node().equals(peer)) {
        return Check.fail(
            name,
            "--region belongs to " + d.node() + ", not to --peer " + peer,
            "pass the --peer and --region printed by the same `doctor --serve`");
      }
      config = base.toBuilder().provider(d.provider()).port(0).build();
    } else {
      config = base.toBuilder().port(0).build();
    }
    try (TransferNode node = TransferNode.start(config)) {
      io.memwire.transfer.Connection c;
      long start = System.nanoTime();
      try {
        c = node.connection(peer);
      } catch (TransferException e) {
        return Check.fail(
            name,
            "cannot connect to " + peer + " over " + node.provider() + ": " + e.getMessage(),
            "is `doctor --serve` (or a Memwire node) running there? open the "
                + "port in the firewall"
                + (node.provider().toString().equals("verbs")
                    ? "; for RoCE also check that both ends are in the same subnet or routed"
                    : ""));
      }
      long connectMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      if (region == null) {
        return Check.warn(
            name,
            "connected to "
                + peer
                + " over "
                + node.provider()
                + " in "
                + connectMs
                + " ms; no read done",
            "pass --region from `doctor --serve` to also " + "read a test region one-sidedly");
      }
      int len = (int) Math.min(region.length(), Integer.MAX_VALUE);
      long readStart = System.nanoTime();
      TransferBuffer b;
      try {
        b =
            c.read(ReadRequest.of(region, 0, len))
                .get(config.readTimeout().toMillis() + 5000, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        return Check.fail(
            name,
            "connected to "
                + peer
                + " but the one-sided read of "
                + len
                + " bytes failed: "
                + e.getCause().getMessage(),
            "the region may be gone (restart "
                + "`doctor --serve` and use its new --region), or the path drops RDMA traffic");
      } catch (TimeoutException e) {
        return Check.fail(
            name,
            "connected to " + peer + " but a read of " + len + " bytes did not complete in time",
            "check the network path (PFC/ECN on RoCE)");
      }
      long readUs = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - readStart);
      try {
        ByteBuffer v = b.nioBuffer();
        for (int i = 0; i < len; i++) {
          if (v.get(i) != pattern(i)) {
            return Check.fail(
                name,
                "read "
                    + len
                    + " bytes from "
                    + peer
                    + " but byte "
                    + i
                    + " differs from the test pattern",
                "data corruption on the path: report it");
          }
        }
      } finally {
        b.release();
      }
      return Check.ok(
          name,
          "connected to "
              + peer
              + " over "
              + node.provider()
              + " in "
              + connectMs
              + " ms and read the "
              + len
              + "-byte test region one-sidedly in "
              + readUs
              + " us, every byte correct");
    } catch (RuntimeException e) {
      return Check.fail(
          name,
          "cannot start a local " + config.provider() + " node to test with: " + e.getMessage(),
          "fix the FAIL lines above");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Check.fail(name, "interrupted", "");
    }
  }
}
