package io.memwire.transfer.tcp;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.BufferedReader;
import java.io.Closeable;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * A serving node in a child JVM that exhausts a resource on command, for {@link
 * TcpResourceExhaustionTest}. Talks over stdin/stdout, one line per message: prints {@code READY
 * <base64 RemoteRegion>}, then {@code FULL <amount>} once the resource is exhausted; answers {@code
 * counters}, {@code release} and {@code exit}.
 */
public final class ExhaustionChild {
  static final int REGION_SIZE = 64 << 10;

  private ExhaustionChild() {}

  static byte[] data() {
    byte[] d = new byte[REGION_SIZE];
    new Random(REGION_SIZE).nextBytes(d);
    return d;
  }

  private static void warmUp(TransferNode node, MemoryRegion region) throws Exception {
    try (TransferNode self =
        TransferNode.start(
            TransferConfig.builder()
                .provider(ProviderKind.TCP)
                .bindAddress("127.0.0.1")
                .ioThreads(1)
                .build())) {
      self.connection(node.localAddress())
          .read(ReadRequest.of(region.remote(), 0, 100))
          .get(30, TimeUnit.SECONDS)
          .release();
    }
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    TransferNode node =
        TransferNode.start(
            TransferConfig.builder()
                .provider(ProviderKind.TCP)
                .bindAddress("127.0.0.1")
                .ioThreads(1)
                .build());
    ByteBuffer buf = ByteBuffer.allocateDirect(REGION_SIZE);
    buf.put(data()).flip();
    MemoryRegion region = TestRegions.register(node, buf);
    // fds: load the serving path's classes while files can still be opened. direct: no warm-up,
    // so the I/O thread has no cached temporary direct buffer and its first read runs out.
    if (mode.equals("fds")) {
      warmUp(node, region);
    }
    System.out.println("READY " + Base64.getEncoder().encodeToString(region.remote().toBytes()));
    List<Closeable> files = new ArrayList<>();
    List<ByteBuffer> direct = new ArrayList<>();
    if (mode.equals("fds")) {
      try {
        while (true) {
          files.add(new FileInputStream("/dev/null"));
        }
      } catch (IOException expected) {
        System.out.println("FULL " + files.size() + " " + expected.getMessage());
      }
    } else {
      long total = 0;
      for (int size = 1 << 20; size >= 1; size >>= 2) {
        try {
          while (true) {
            direct.add(ByteBuffer.allocateDirect(size));
            total += size;
          }
        } catch (OutOfMemoryError expected) {
          // next, smaller size
        }
      }
      System.out.println("FULL " + total);
    }
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      switch (line) {
        case "counters":
          {
            Map<String, Long> m = node.stats().asMap();
            long alive =
                Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().startsWith("memwire-tcp-serve-") && t.isAlive())
                    .count();
            System.out.println(
                "COUNTERS "
                    + m.getOrDefault("acceptFailures", -1L)
                    + " "
                    + m.getOrDefault("loopErrors", -1L)
                    + " "
                    + alive);
            break;
          }
        case "release":
          for (Closeable c : files) {
            c.close();
          }
          files.clear();
          direct.clear();
          System.gc();
          System.out.println("RELEASED");
          break;
        case "exit":
          region.close();
          node.close();
          System.out.println("BYE");
          return;
        default:
          System.out.println("UNKNOWN " + line);
      }
    }
  }
}
