package io.memwire.verbscheck;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The RDMA objects (memory regions, queue pairs, completion queues, protection domains) each
 * executor process holds, as the kernel lists them in {@code rdma resource show}.
 */
final class RdmaResources {
  private RdmaResources() {}

  /** {mr, qp, cq, pd} owned by each executor pid, from {@code rdma resource show}. */
  static Map<String, int[]> byExecutor(Map<String, Long> pids) throws Exception {
    Map<String, int[]> m = new TreeMap<>();
    String[] kinds = {"mr", "qp", "cq", "pd"};
    Map<String, List<String>> lines = new HashMap<>();
    for (String k : kinds) {
      lines.put(k, runLines("rdma", "resource", "show", k));
      System.out.println("spark-check rdma resource show " + k + ": " + lines.get(k));
    }
    for (Map.Entry<String, Long> e : pids.entrySet()) {
      int[] n = new int[4];
      for (int i = 0; i < 4; i++) {
        n[i] = (int) lines.get(kinds[i]).stream().filter(l -> ownedBy(l, e.getValue())).count();
      }
      m.put(e.getKey(), n);
    }
    return m;
  }

  /**
   * Whether a line of {@code rdma resource show} belongs to process {@code pid}. The kernel records
   * the task that created the object, which for a JVM is one of its threads: the pid printed may be
   * a thread id of the process, so {@code /proc/PID/task/TID} is checked too.
   */
  static boolean ownedBy(String line, long pid) {
    List<String> t = Arrays.asList(line.trim().split("\\s+"));
    int i = t.indexOf("pid");
    if (i < 0 || i + 1 >= t.size()) {
      return false;
    }
    String owner = t.get(i + 1);
    return owner.equals(String.valueOf(pid))
        || (owner.matches("[0-9]+")
            && Files.exists(Path.of("/proc", String.valueOf(pid), "task", owner)));
  }

  private static List<String> runLines(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    List<String> lines =
        new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
            .lines()
            .collect(Collectors.toList());
    if (!p.waitFor(2, TimeUnit.MINUTES) || p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", cmd) + " failed: " + lines);
    }
    return lines;
  }
}
