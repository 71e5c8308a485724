package io.memwire.mainjob;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * What the main job prints at the end, from every run's {@link ShuffleAppResult}: medians and
 * spreads per configuration, the executors' CPU per GiB and the fixed costs of a small job; and its
 * verdict: every run gave the reference's results, and Memwire's remote bytes went one-sided.
 */
final class ComparisonReport {
  private ComparisonReport() {}

  /**
   * Prints medians and spreads per configuration and the fixed costs of a small job, checks that
   * every run gave the reference's results and that Memwire's remote bytes went one-sided; returns
   * the exit status.
   */
  static int report(Map<String, List<ShuffleAppResult>> results, Path workDir) throws IOException {
    List<String> names = new ArrayList<>(results.keySet());
    String refName = names.get(0);
    ShuffleAppResult ref = results.get(refName).get(0);
    int status = 0;
    for (Map.Entry<String, List<ShuffleAppResult>> run : results.entrySet()) {
      for (ShuffleAppResult r : run.getValue()) {
        if (!r.resultDigest().equals(ref.resultDigest())
            || r.resultRows() != ref.resultRows()
            || !r.smallDigest().equals(ref.smallDigest())) {
          MainJob.say(
              "RESULTS DIFFER: %s gave %s / %s, %s gave %s / %s",
              run.getKey(),
              r.resultDigest(),
              r.smallDigest(),
              refName,
              ref.resultDigest(),
              ref.smallDigest());
          status = 1;
        }
      }
    }
    StringBuilder t = new StringBuilder();
    t.append(
        String.format(
            Locale.ROOT,
            "%n%-22s %6s %18s %8s %11s %11s %10s %10s %10s %10s%n",
            "shuffle",
            "runs",
            "main job s",
            "vs sort",
            "first small",
            "later small",
            "exec ready",
            "remote MB",
            "one-sided",
            "fetch wait"));
    t.append(
        String.format(
            Locale.ROOT,
            "%-22s %6s %18s %8s %11s %11s %10s %10s %10s %10s%n",
            "",
            "",
            "median (min-max)",
            "median",
            "job s",
            "job s",
            "s",
            "",
            "MB",
            "ms"));
    double refWall = median(results.get(refName), ShuffleAppResult::wallSeconds);
    for (String name : names) {
      List<ShuffleAppResult> rs = results.get(name);
      double wall = median(rs, ShuffleAppResult::wallSeconds);
      boolean counters = rs.stream().allMatch(ShuffleAppResult::managerCounters);
      t.append(
          String.format(
              Locale.ROOT,
              "%-22s %6d %7.2f (%.2f-%.2f) %8.2f %11.2f %11.2f %10.1f %10.1f %10s %10.0f%n",
              name,
              rs.size(),
              wall,
              min(rs, ShuffleAppResult::wallSeconds),
              max(rs, ShuffleAppResult::wallSeconds),
              wall / refWall,
              median(rs, ShuffleAppResult::smallColdSeconds),
              median(rs, ShuffleAppResult::smallWarmSeconds),
              median(rs, ShuffleAppResult::executorsReadySeconds),
              median(rs, ShuffleAppResult::remoteBytesRead) / 1e6,
              counters
                  ? String.format(
                      Locale.ROOT, "%.1f", median(rs, ShuffleAppResult::oneSidedBytes) / 1e6)
                  : "-",
              median(rs, ShuffleAppResult::fetchWaitMs)));
    }
    List<Double> ratios = new ArrayList<>();
    String memwireName =
        names.stream().filter(n -> n.startsWith("memwire")).findFirst().orElse(null);
    if (memwireName != null && results.get(memwireName).size() == results.get(refName).size()) {
      for (int i = 0; i < results.get(refName).size(); i++) {
        ratios.add(
            results.get(memwireName).get(i).wallSeconds()
                / results.get(refName).get(i).wallSeconds());
      }
      t.append(
          String.format(
              Locale.ROOT,
              "%nmain job wall ratio %s/%s per round: %s%n",
              memwireName,
              refName,
              ratios.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList()));
      t.append(cpuPerGiB(results.get(refName), results.get(memwireName)));
      t.append(fixedCosts(results.get(refName), results.get(memwireName)));
    }
    System.out.print(t);
    Files.writeString(workDir.resolve("comparison.txt"), t.toString());
    for (String name : names) {
      if (!name.startsWith("memwire")) {
        continue;
      }
      for (ShuffleAppResult r : results.get(name)) {
        long remote = r.allRemoteBytes();
        long oneSided = r.allOneSidedBytes();
        if (r.remoteBytesRead() <= 0) {
          MainJob.say("FAILED: the %s run read no remote shuffle bytes", name);
          status = 1;
        } else if (!r.managerCounters()
            || oneSided < remote
            || r.allFallbackBlocks() > 0
            || r.allFailedBlocks() > 0) {
          MainJob.say(
              "PATH CHECK FAILED: %s: Spark read %,d remote bytes, Memwire %,d of them one-sided,"
                  + " %d fallback blocks",
              name, remote, oneSided, r.allFallbackBlocks());
          status = 1;
        }
      }
    }
    if (status == 0) {
      MainJob.say(
          "results identical in every run: %,d rows, digest %s; every remote byte of the"
              + " Memwire runs went one-sided",
          ref.resultRows(), ref.resultDigest());
    }
    return status;
  }

  /**
   * The executors' CPU per GiB of remote bytes in the main job, medians and ratios: serving threads
   * (Spark's Netty server; Memwire's tcp serving loops), all transport threads (plus the reading
   * side's threads), whole executor JVMs.
   */
  static String cpuPerGiB(List<ShuffleAppResult> sort, List<ShuffleAppResult> memwire) {
    if (median(sort, ShuffleAppResult::executorCpuMsPerGiB) < 0
        || median(memwire, ShuffleAppResult::executorCpuMsPerGiB) < 0) {
      return String.format(
          Locale.ROOT,
          "%nexecutor CPU: not measured (needs Linux /proc and"
              + " executors started by the driver)%n");
    }
    StringBuilder s =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "%nexecutor CPU per GiB of remote bytes, main job (medians, ms/GiB):%n"));
    Map<String, ToDoubleFunction<ShuffleAppResult>> groups = new LinkedHashMap<>();
    groups.put("serving", ShuffleAppResult::servingCpuMsPerGiB);
    groups.put("transport", ShuffleAppResult::transportCpuMsPerGiB);
    groups.put("executor", ShuffleAppResult::executorCpuMsPerGiB);
    for (Map.Entry<String, ToDoubleFunction<ShuffleAppResult>> g : groups.entrySet()) {
      String k = g.getKey();
      double a = median(sort, g.getValue());
      double b = median(memwire, g.getValue());
      s.append(
          String.format(
              Locale.ROOT, "  %-9s sort %8.0f, memwire %8.0f, ratio %.2f%n", k, a, b, b / a));
    }
    return s.toString();
  }

  /** What a small job pays with Memwire beyond Spark's shuffle, and which part remains. */
  static String fixedCosts(List<ShuffleAppResult> sort, List<ShuffleAppResult> memwire) {
    double ready =
        median(memwire, ShuffleAppResult::executorsReadySeconds)
            - median(sort, ShuffleAppResult::executorsReadySeconds);
    double first =
        median(memwire, ShuffleAppResult::smallColdSeconds)
            - median(sort, ShuffleAppResult::smallColdSeconds);
    double later =
        median(memwire, ShuffleAppResult::smallWarmSeconds)
            - median(sort, ShuffleAppResult::smallWarmSeconds);
    double firstExtra = first - later;
    // -1: the executors' CPU was not measurable (no /proc); then the line leaves it out.
    boolean cpuMeasured =
        min(memwire, r -> r.cold().executorCpuMs()) >= 0
            && min(sort, r -> r.cold().executorCpuMs()) >= 0;
    String firstCpu =
        !cpuMeasured
            ? ""
            : String.format(
                Locale.ROOT,
                "; the first job's executor CPU %+.2f s, of it JIT compilers %+.2f s",
                (median(memwire, r -> r.cold().executorCpuMs())
                        - median(sort, r -> r.cold().executorCpuMs()))
                    / 1e3,
                (median(memwire, r -> r.cold().jitCpuMs()) - median(sort, r -> r.cold().jitCpuMs()))
                    / 1e3);
    ShuffleAppResult m = memwire.get(memwire.size() - 1);
    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "%nfixed costs of a small job (16,000 records, medians,"
                + " Memwire minus Spark's sort shuffle):%n"));
    s.append(
        String.format(
            Locale.ROOT,
            "  executor start (transfer node start, before any job):" + " %+.2f s%n",
            ready));
    s.append(
        String.format(
            Locale.ROOT,
            "  first small job, beyond a later one (JIT of the read"
                + " path, first connections: %d open): %+.2f s; directory slot reads %d, index reads"
                + " %d, publishing %.0f ms in map tasks%s%n",
            m.openConnections(),
            firstExtra,
            m.cold().slotReads(),
            m.cold().indexReads(),
            m.cold().publishMicros() / 1e3,
            firstCpu));
    s.append(
        String.format(
            Locale.ROOT,
            "  every later small job: %+.2f s; per job %d map"
                + " outputs registered and mapped, %d directory slot reads, %d index reads, %d index"
                + " cache hits, %d one-sided fetch requests (first block after %.0f us on average),"
                + " publishing %.0f ms in map tasks%n",
            later,
            m.warm().outputsPublished(),
            m.warm().slotReads(),
            m.warm().indexReads(),
            m.warm().indexCacheHits(),
            m.warm().fetchRequests(),
            m.warm().fetchRequests() == 0
                ? 0.0
                : (double) m.warm().firstBlockMicros() / m.warm().fetchRequests(),
            m.warm().publishMicros() / 1e3));
    s.append(
        String.format(
            Locale.ROOT,
            "  remains in every small job: %+.2f s (%s); paid once"
                + " per executor: %+.2f s at start and %+.2f s in its first job%n",
            later,
            Math.abs(later) < 0.05
                ? "within noise"
                : later > 0
                    ? "registrations, directory and index" + " reads"
                    : "none: Memwire is faster",
            ready,
            firstExtra));
    return s.toString();
  }

  static double median(List<ShuffleAppResult> rs, ToDoubleFunction<ShuffleAppResult> key) {
    List<Double> v = new ArrayList<>(rs.stream().map(key::applyAsDouble).toList());
    v.sort(Double::compare);
    return ShuffleApp.median(v);
  }

  static double min(List<ShuffleAppResult> rs, ToDoubleFunction<ShuffleAppResult> key) {
    return rs.stream().mapToDouble(key).min().orElse(Double.NaN);
  }

  static double max(List<ShuffleAppResult> rs, ToDoubleFunction<ShuffleAppResult> key) {
    return rs.stream().mapToDouble(key).max().orElse(Double.NaN);
  }
}
