package io.memwire.localcluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * CPU time of the executor JVMs this JVM started, per group of threads, read from Linux's {@code
 * /proc}: the serving side of a shuffle is a set of named threads (Spark's Netty server, Memwire's
 * tcp serving loops, Memwire's verbs threads), and one-sided reads exist to take their work away;
 * the JIT compilers and the garbage collector are groups of their own. In {@code local-cluster}
 * mode the Workers run inside the driver JVM, so every executor is a descendant process of it; on a
 * real cluster executors run elsewhere and {@link #take()} finds none.
 *
 * <p>Thread names come from {@code /proc/PID/task/TID/comm}, which Linux cuts at 15 characters:
 * every group below is a prefix no longer than that. Times are the kernel's user + system clock
 * ticks (USER_HZ, 100 on Linux), so a figure is good to about 10 ms per thread. Threads that ended
 * between two snapshots are missing from the groups, not from {@link Group#PROCESS}.
 */
public final class ExecutorCpu {
  /** Nanoseconds per USER_HZ tick: the kernel ABI fixes USER_HZ at 100 on Linux. */
  private static final long NANOS_PER_TICK = 10_000_000L;

  private static final Path PROC = Path.of("/proc");

  /** Thread groups, matched by name prefix in this order; {@link #PROCESS} is the whole JVM. */
  public enum Group {
    /** Spark's block transfer server: Netty event loops that send blocks to readers. */
    NETTY_SERVER("shuffle-server"),
    /** Spark's block transfer client: Netty event loops that receive fetched blocks. */
    NETTY_CLIENT("shuffle-client"),
    /** Memwire's tcp serving loops: accepting, and the responder that sends blocks. */
    MEMWIRE_TCP_SERVE("memwire-tcp-ser"),
    /** Memwire's tcp reading loops: requests out, blocks in. */
    MEMWIRE_TCP_READ("memwire-tcp-rea"),
    /** Memwire's verbs threads: completions, connection management, authentication. */
    MEMWIRE_VERBS("memwire-verbs"),
    /** Every other thread whose name starts with {@code memwire-}. */
    MEMWIRE_OTHER("memwire-"),
    /** The JIT compilers (HotSpot's C1 and C2 threads). */
    JIT("C1 Compiler", "C2 Compiler"),
    /** The garbage collector's threads (G1's and the parallel GC workers). */
    GC("GC Thread", "G1 "),
    /** All threads of the process, including ones that have ended. */
    PROCESS();

    private final String[] prefixes;

    Group(String... prefixes) {
      this.prefixes = prefixes;
    }

    static Group of(String threadName) {
      for (Group g : values()) {
        for (String prefix : g.prefixes) {
          if (threadName.startsWith(prefix)) {
            return g;
          }
        }
      }
      return null;
    }
  }

  /** CPU nanoseconds per group and executor process id at one moment. */
  public static final class Snapshot {
    private final Map<Long, Map<Group, Long>> byPid;

    Snapshot(Map<Long, Map<Group, Long>> byPid) {
      this.byPid = byPid;
    }

    /** Executor process ids found. */
    public java.util.Set<Long> pids() {
      return Collections.unmodifiableSet(byPid.keySet());
    }

    /** The nanoseconds of {@code group} summed over all executors. */
    public long nanos(Group group) {
      return byPid.values().stream().mapToLong(m -> m.getOrDefault(group, 0L)).sum();
    }

    /**
     * The threads that send blocks: Spark's Netty server, Memwire's tcp serving loops and its verbs
     * threads (which also complete this executor's own reads, so an upper bound over verbs).
     */
    public long servingNanos() {
      return nanos(Group.NETTY_SERVER)
          + nanos(Group.MEMWIRE_TCP_SERVE)
          + nanos(Group.MEMWIRE_VERBS);
    }

    /** Every transport thread: {@link #servingNanos()} and the reading side's loops. */
    public long transportNanos() {
      return servingNanos() + nanos(Group.NETTY_CLIENT) + nanos(Group.MEMWIRE_TCP_READ);
    }

    /** The nanoseconds of {@code group} in one executor (0 when unknown). */
    public long nanos(long pid, Group group) {
      return byPid.getOrDefault(pid, Map.of()).getOrDefault(group, 0L);
    }

    /**
     * What each group used between {@code earlier} and this snapshot, for the executors present in
     * both (an executor started in between counts from zero).
     */
    public Snapshot since(Snapshot earlier) {
      Map<Long, Map<Group, Long>> d = new LinkedHashMap<>();
      byPid.forEach(
          (pid, now) -> {
            Map<Group, Long> before = earlier.byPid.getOrDefault(pid, Map.of());
            Map<Group, Long> diff = new EnumMap<>(Group.class);
            now.forEach((g, v) -> diff.put(g, v - before.getOrDefault(g, 0L)));
            d.put(pid, diff);
          });
      return new Snapshot(d);
    }

    @Override
    public String toString() {
      StringBuilder s = new StringBuilder();
      for (Group g : Group.values()) {
        s.append(s.length() == 0 ? "" : ", ")
            .append(g.name().toLowerCase(java.util.Locale.ROOT))
            .append(' ')
            .append(nanos(g) / 1_000_000)
            .append(" ms");
      }
      return s.toString();
    }
  }

  private ExecutorCpu() {}

  /** Whether this machine has the {@code /proc} files the snapshots read (Linux). */
  public static boolean available() {
    return Files.isReadable(PROC.resolve("self/task"));
  }

  /**
   * A snapshot of every descendant process that runs Spark's executor backend; empty when there is
   * none or {@code /proc} is missing. A process or thread that ends while it is read is skipped.
   */
  public static Snapshot take() {
    Map<Long, Map<Group, Long>> byPid = new LinkedHashMap<>();
    if (!available()) {
      return new Snapshot(byPid);
    }
    ProcessHandle.current()
        .descendants()
        .forEach(
            p -> {
              try {
                if (isExecutor(p.pid())) {
                  byPid.put(p.pid(), read(p.pid()));
                }
              } catch (IOException | RuntimeException e) {
                // the process ended while being read
              }
            });
    return new Snapshot(byPid);
  }

  private static boolean isExecutor(long pid) throws IOException {
    byte[] cmd = Files.readAllBytes(PROC.resolve(pid + "/cmdline"));
    return new String(cmd, StandardCharsets.UTF_8).contains("CoarseGrainedExecutorBackend");
  }

  static Map<Group, Long> read(long pid) throws IOException {
    Map<Group, Long> m = new EnumMap<>(Group.class);
    m.put(Group.PROCESS, ticks(Files.readString(PROC.resolve(pid + "/stat"))) * NANOS_PER_TICK);
    try (Stream<Path> tasks = Files.list(PROC.resolve(pid + "/task"))) {
      tasks.forEach(
          t -> {
            try {
              Group g = Group.of(Files.readString(t.resolve("comm")).strip());
              if (g != null) {
                m.merge(g, ticks(Files.readString(t.resolve("stat"))) * NANOS_PER_TICK, Long::sum);
              }
            } catch (IOException e) {
              // the thread ended while being read
            }
          });
    }
    return m;
  }

  /**
   * utime + stime of a {@code stat} line: fields 14 and 15, counted after the command name, which
   * is in parentheses and may itself hold spaces and parentheses.
   */
  static long ticks(String stat) {
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
    // f[0] is field 3 (state), so utime (14) is f[11] and stime (15) f[12]
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }
}
