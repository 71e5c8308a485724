package io.memwire.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A serving node in a child JVM runs out of file descriptors, or of direct memory, while peers
 * connect: the listener keeps accepting, the I/O thread survives, and once the resource is back a
 * reader gets the right bytes.
 */
class TcpResourceExhaustionTest {

  /** The child JVM and its line protocol. */
  private static final class Child implements AutoCloseable {
    final Process process;
    final PrintStream toChild;
    final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    final StringBuilder transcript = new StringBuilder();

    Child(List<String> command) throws IOException {
      process = new ProcessBuilder(command).redirectErrorStream(true).start();
      toChild = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
      Thread reader =
          new Thread(
              () -> {
                try (BufferedReader r =
                    new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                  String l;
                  while ((l = r.readLine()) != null) {
                    lines.add(l);
                  }
                } catch (IOException ignored) {
                  // the child is gone
                }
              },
              "exhaustion-child-output");
      reader.setDaemon(true);
      reader.start();
    }

    /** Waits for the child's next line starting with {@code prefix}; other lines are logged. */
    String expect(String prefix, long seconds) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
      while (true) {
        long left = deadline - System.nanoTime();
        String l = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
        assertNotNull(
            l,
            "child did not print " + prefix + " within " + seconds + " s; output:\n" + transcript);
        if (!l.startsWith("COUNTERS")) {
          transcript.append(l).append('\n');
        }
        if (l.startsWith(prefix)) {
          return l.substring(prefix.length()).trim();
        }
      }
    }

    /** acceptFailures, loopErrors, live I/O threads. */
    long[] counters() throws InterruptedException {
      toChild.println("counters");
      String[] f = expect("COUNTERS", 30).split(" ");
      return new long[] {Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2])};
    }

    @Override
    public void close() throws InterruptedException {
      toChild.println("exit");
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  private static List<String> java(List<String> jvmOptions, String mode) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(jvmOptions);
    cmd.add("-cp");
    cmd.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    cmd.add(ExhaustionChild.class.getName());
    cmd.add(mode);
    return cmd;
  }

  private static void awaitCounter(Child child, int index, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (child.counters()[index] < 1) {
      assertTrue(
          System.nanoTime() < deadline,
          "child never counted " + what + "; output:\n" + child.transcript);
      Thread.sleep(100);
    }
  }

  private static void assertReadsCorrectBytes(RemoteRegion region) throws Exception {
    try (TransferNode reader =
        TransferNode.start(
            TransferConfig.builder().provider(ProviderKind.TCP).bindAddress("127.0.0.1").build())) {
      TransferBuffer b =
          reader
              .connection(region.node())
              .read(ReadRequest.of(region, 0, ExhaustionChild.REGION_SIZE))
              .get(60, TimeUnit.SECONDS);
      byte[] got = new byte[ExhaustionChild.REGION_SIZE];
      b.nioBuffer().get(got);
      b.release();
      assertArrayEquals(ExhaustionChild.data(), got);
    }
  }

  private static List<Socket> connectSome(RemoteRegion region, int n) throws IOException {
    List<Socket> sockets = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Socket s = new Socket();
      s.connect(region.node(), 10_000); // the kernel completes it even if accept() cannot
      s.setSoTimeout(30_000);
      s.getOutputStream().write(Handshake.hello(false, Handshake.nonce()).array());
      sockets.add(s);
    }
    return sockets;
  }

  @Test
  void listenerKeepsAcceptingAfterFileDescriptorsRunOut() throws Exception {
    // ulimit in a shell that then becomes the JVM, so only the child has the low limit.
    List<String> cmd =
        new ArrayList<>(List.of("bash", "-c", "ulimit -n 256 && exec \"$0\" \"$@\""));
    cmd.addAll(java(List.of("-Xmx256m"), "fds"));
    try (Child child = new Child(cmd)) {
      RemoteRegion region =
          RemoteRegion.fromBytes(Base64.getDecoder().decode(child.expect("READY", 60)));
      child.expect("FULL", 60);
      List<Socket> waiting = connectSome(region, 3);
      awaitCounter(child, 0, "acceptFailures");
      child.toChild.println("release");
      child.expect("RELEASED", 30);
      assertReadsCorrectBytes(region);
      for (Socket s : waiting) {
        s.close();
      }
      long[] c = child.counters();
      assertTrue(c[0] >= 1, "acceptFailures " + c[0]);
      assertEquals(1, c[2], "the child's serving I/O thread is alive");
    }
  }

  @Test
  void ioThreadSurvivesDirectMemoryExhaustion() throws Exception {
    try (Child child =
        new Child(java(List.of("-Xmx256m", "-XX:MaxDirectMemorySize=8m"), "direct"))) {
      RemoteRegion region =
          RemoteRegion.fromBytes(Base64.getDecoder().decode(child.expect("READY", 60)));
      child.expect("FULL", 120);
      List<Socket> connected = connectSome(region, 3);
      awaitCounter(child, 1, "loopErrors (an OutOfMemoryError survived)");
      assertEquals(1, child.counters()[2], "the child's serving I/O thread is alive");
      child.toChild.println("release");
      child.expect("RELEASED", 30);
      assertReadsCorrectBytes(region);
      for (Socket s : connected) {
        s.close();
      }
      assertEquals(1, child.counters()[2], "the child's serving I/O thread is alive");
    }
  }
}
