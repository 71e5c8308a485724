package io.memwire.localcluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ExecutorCpuTest {
  private static final long BURN_MS = 400;

  @Test
  void ticksAreFields14And15EvenWhenTheNameHoldsParenthesesAndSpaces() {
    String stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 37 5 0 0 20 0 12 0";
    assertEquals(42, ExecutorCpu.ticks(stat));
  }

  /** Groups match the names as Linux shows them: cut to 15 characters. */
  @Test
  void groupsMatchThreadNamesCutTo15Characters() {
    assertEquals(ExecutorCpu.Group.MEMWIRE_TCP_SERVE, ExecutorCpu.Group.of("memwire-tcp-ser"));
    assertEquals(ExecutorCpu.Group.MEMWIRE_TCP_READ, ExecutorCpu.Group.of("memwire-tcp-rea"));
    assertEquals(ExecutorCpu.Group.MEMWIRE_OTHER, ExecutorCpu.Group.of("memwire-shuffle"));
    assertEquals(ExecutorCpu.Group.NETTY_SERVER, ExecutorCpu.Group.of("shuffle-server-"));
    assertEquals(ExecutorCpu.Group.JIT, ExecutorCpu.Group.of("C2 CompilerThre"));
    assertEquals(ExecutorCpu.Group.JIT, ExecutorCpu.Group.of("C1 CompilerThre"));
    assertEquals(ExecutorCpu.Group.GC, ExecutorCpu.Group.of("GC Thread#1"));
    assertEquals(ExecutorCpu.Group.GC, ExecutorCpu.Group.of("G1 Conc#0"));
    assertEquals(null, ExecutorCpu.Group.of("Executor task l"));
  }

  /**
   * A child process that looks like an executor burns a known amount of CPU in a thread named like
   * Spark's Netty server and then waits: the snapshot finds it, puts the time in that group and in
   * the process total, and nothing in Memwire's groups.
   */
  @Test
  void findsAnExecutorChildAndSplitsItsCpuByThreadName() throws Exception {
    assumeTrue(ExecutorCpu.available(), "no /proc on this machine");
    ExecutorCpu.Snapshot none = ExecutorCpu.take();
    Process child =
        new ProcessBuilder(
                List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp",
                    System.getProperty("java.class.path"),
                    "-Dmarker=org.apache.spark.executor.CoarseGrainedExecutorBackend",
                    Burner.class.getName()))
            .redirectErrorStream(true)
            .start();
    try {
      BufferedReader out =
          new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("burnt", out.readLine());
      ExecutorCpu.Snapshot s = ExecutorCpu.take();
      assertEquals(List.of(child.pid()), List.copyOf(s.pids()));
      ExecutorCpu.Snapshot d = s.since(none);
      long server = d.nanos(ExecutorCpu.Group.NETTY_SERVER) / 1_000_000;
      assertTrue(server >= BURN_MS - 20 && server < BURN_MS * 3, "netty server ms " + server);
      assertTrue(d.nanos(ExecutorCpu.Group.PROCESS) / 1_000_000 >= server, d.toString());
      assertEquals(0, d.nanos(ExecutorCpu.Group.MEMWIRE_TCP_SERVE), d.toString());
      assertEquals(0, d.nanos(ExecutorCpu.Group.MEMWIRE_TCP_READ), d.toString());
      assertEquals(
          d.nanos(ExecutorCpu.Group.NETTY_SERVER),
          d.nanos(child.pid(), ExecutorCpu.Group.NETTY_SERVER));
    } finally {
      child.getOutputStream().close(); // the child exits at end of input
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    }
    assertTrue(ExecutorCpu.take().pids().isEmpty());
  }

  /** The child: a thread named like Spark's server loop burns BURN_MS of its own CPU time. */
  public static final class Burner {
    public static void main(String[] args) throws Exception {
      java.util.concurrent.CountDownLatch burnt = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.CountDownLatch exit = new java.util.concurrent.CountDownLatch(1);
      Thread t =
          new Thread(
              () -> {
                ThreadMXBean mx = ManagementFactory.getThreadMXBean();
                long x = 0;
                while (mx.getCurrentThreadCpuTime() < BURN_MS * 1_000_000) {
                  x += Long.numberOfTrailingZeros(x + System.nanoTime());
                }
                burnt.countDown();
                try {
                  exit.await(); // stays alive: /proc drops a thread's time when it ends
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "shuffle-server-3-1");
      t.setDaemon(true);
      t.start();
      burnt.await();
      System.out.println("burnt");
      System.out.flush();
      while (System.in.read() >= 0) {
        // wait for the parent to close our input
      }
      exit.countDown();
      t.join();
    }
  }
}
