package io.memwire.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A tcp node's I/O threads come in two named sets of {@code ioThreads}: serving loops carry the
 * connections it accepted, reading loops the ones it opened. The work lands on the matching set:
 * the server's serving loops burn the CPU of sending, its reading loops stay idle, and the reader's
 * serving loops are idle too. The benchmarks' serving CPU is read from these names.
 */
class TcpLoopRolesTest {
  private static final int MIB = 1 << 20;

  @Test
  void servingAndReadingRunOnTheirOwnLoops() throws Exception {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Set<Long> before = tcpThreads().keySet();
    TransferNode server = start(3);
    Map<Long, String> serverThreads = without(tcpThreads(), before);
    TransferNode reader = start(3);
    Map<Long, String> readerThreads =
        without(without(tcpThreads(), before), serverThreads.keySet());
    try {
      assertEquals(
          List.of("read", "read", "read", "serve", "serve", "serve"), roles(serverThreads));
      assertEquals(
          List.of("read", "read", "read", "serve", "serve", "serve"), roles(readerThreads));

      byte[] data = new byte[8 * MIB];
      new Random(8).nextBytes(data);
      ByteBuffer direct = ByteBuffer.allocateDirect(data.length).put(data).flip();
      Map<Long, Long> cpu0 = cpu(mx, serverThreads, readerThreads);
      try (MemoryRegion region = TestRegions.register(server, direct)) {
        for (int round = 0; round < 16; round++) {
          List<ReadRequest> reqs = new ArrayList<>();
          for (int off = 0; off < data.length; off += MIB) {
            reqs.add(ReadRequest.of(region.remote(), off, MIB));
          }
          var batch = reader.connection(server.localAddress()).read(reqs);
          for (int i = 0; i < reqs.size(); i++) {
            TransferBuffer b = batch.result(i).get(30, TimeUnit.SECONDS);
            byte[] got = new byte[MIB];
            b.nioBuffer().get(got);
            b.release();
            byte[] want = new byte[MIB];
            System.arraycopy(data, i * MIB, want, 0, MIB);
            assertArrayEquals(want, got);
          }
        }
      }
      Map<Long, Long> used = since(cpu(mx, serverThreads, readerThreads), cpu0);
      long serverServing = sum(used, serverThreads, "serve");
      long serverReading = sum(used, serverThreads, "read");
      long readerServing = sum(used, readerThreads, "serve");
      long readerReading = sum(used, readerThreads, "read");
      String all =
          "server serve/read "
              + serverServing / 1_000_000
              + "/"
              + serverReading / 1_000_000
              + " ms, reader serve/read "
              + readerServing / 1_000_000
              + "/"
              + readerReading / 1_000_000
              + " ms";
      // 128 MiB sent and received: each busy side spends far more than an idle loop's ticks.
      assertTrue(serverServing > 10 * Math.max(serverReading, 1_000_000), all);
      assertTrue(readerReading > 10 * Math.max(readerServing, 1_000_000), all);
    } finally {
      reader.close();
      server.close();
    }
    Set<Long> alive = tcpThreads().keySet();
    assertTrue(
        alive.stream()
            .noneMatch(id -> serverThreads.containsKey(id) || readerThreads.containsKey(id)),
        "every loop joined at close");
  }

  private static TransferNode start(int ioThreads) {
    return TransferNode.start(
        TransferConfig.builder()
            .provider(ProviderKind.TCP)
            .bindAddress("127.0.0.1")
            .ioThreads(ioThreads)
            .build());
  }

  /** Live tcp I/O threads by id: their names. */
  private static Map<Long, String> tcpThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("memwire-tcp-") && t.isAlive())
        .collect(Collectors.toMap(Thread::getId, Thread::getName, (a, b) -> a, TreeMap::new));
  }

  private static Map<Long, String> without(Map<Long, String> threads, Set<Long> ids) {
    Map<Long, String> out = new TreeMap<>(threads);
    out.keySet().removeAll(ids);
    return out;
  }

  private static List<String> roles(Map<Long, String> threads) {
    return threads.values().stream().map(TcpLoopRolesTest::role).sorted().toList();
  }

  /** "serve" or "read" from {@code memwire-tcp-ROLE-ID-I}; the first 15 characters tell it. */
  private static String role(String name) {
    String comm = name.substring(0, Math.min(15, name.length()));
    return comm.startsWith("memwire-tcp-ser")
        ? "serve"
        : comm.startsWith("memwire-tcp-rea") ? "read" : "other: " + name;
  }

  private static Map<Long, Long> cpu(ThreadMXBean mx, Map<Long, String> a, Map<Long, String> b) {
    Map<Long, Long> m = new TreeMap<>();
    for (Map<Long, String> threads : List.of(a, b)) {
      for (long id : threads.keySet()) {
        m.put(id, mx.getThreadCpuTime(id));
      }
    }
    return m;
  }

  private static Map<Long, Long> since(Map<Long, Long> now, Map<Long, Long> then) {
    Map<Long, Long> d = new TreeMap<>();
    now.forEach((id, v) -> d.put(id, v - then.get(id)));
    return d;
  }

  private static long sum(Map<Long, Long> used, Map<Long, String> threads, String role) {
    return threads.entrySet().stream()
        .filter(e -> role(e.getValue()).equals(role))
        .mapToLong(e -> used.get(e.getKey()))
        .sum();
  }
}
