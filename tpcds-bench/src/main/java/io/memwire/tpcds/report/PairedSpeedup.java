package io.memwire.tpcds.report;

import io.memwire.tpcds.run.Measurement;
import io.memwire.tpcds.run.RunResult;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Speed-ups from paired rounds: configurations run the same query in every round, one after the
 * other, so the reference's time over another's in the same round cancels what drifts between
 * rounds (load, caches). Per query: the geometric mean of those per-round ratios, of wall time and
 * of the tasks' summed run time; per configuration: the geometric mean over queries.
 *
 * <p>The 95% interval of the wall ratio is a two-level bootstrap (fixed seed, so a report is
 * reproducible): sessions are resampled, then rounds within each drawn session, and every query of
 * a drawn round comes along. Rounds on one set of clusters are not independent samples (they share
 * what each JVM's compilations made of it), so with one session the interval speaks for those
 * clusters only; with several it also covers the cluster-to-cluster part. An interval that holds 1
 * says the run cannot tell the two apart.
 */
public final class PairedSpeedup {
  private static final int RESAMPLES = 4000;
  private static final long SEED = 20261203L;

  /**
   * One query's (or the whole set's, {@code query} "all") paired figures for one configuration.
   *
   * @param rounds rounds in which both ran (timed only)
   * @param wall geometric mean of reference wall / this wall, per round
   * @param low 2.5th percentile of the resampled {@code wall}
   * @param high 97.5th percentile of the resampled {@code wall}
   * @param taskTime geometric mean of reference task run time / this task run time, per round
   * @param taskCpu the same of the tasks' CPU time: where it stays near 1 while {@code taskTime}
   *     falls, the tasks did the same work but waited or were off their cores longer
   */
  public record Row(
      String config,
      String query,
      int rounds,
      double wall,
      double low,
      double high,
      double taskTime,
      double taskCpu) {}

  /**
   * One session's set figure for one configuration: what its clusters alone say.
   *
   * @param session 0-based session
   * @param rounds timed rounds of the session in which both ran
   * @param wall geometric mean over queries of each query's paired wall ratio in the session
   */
  public record SessionRow(String config, int session, int rounds, double wall) {}

  /** log(reference / config) of one query in one round: wall time, task run time, task CPU. */
  private record Pair(int session, double wall, double task, double cpu) {}

  private enum Figure {
    WALL,
    TASK,
    CPU
  }

  private PairedSpeedup() {}

  /** Per non-reference configuration: a row per query with paired rounds, then the set's row. */
  public static List<Row> of(RunResult r) {
    List<Row> rows = new ArrayList<>();
    for (int c = 1; c < r.configs().size(); c++) {
      String config = r.configs().get(c).name();
      Map<String, Map<Integer, Pair>> pairs = pairsByQuery(r, config);
      if (pairs.isEmpty()) {
        continue;
      }
      double[][] resamples = bootstrap(pairs);
      int qi = 0;
      double wallSum = 0;
      double taskSum = 0;
      double cpuSum = 0;
      int rounds = 0;
      for (Map.Entry<String, Map<Integer, Pair>> e : pairs.entrySet()) {
        double wall = mean(e.getValue().values(), Figure.WALL);
        double task = mean(e.getValue().values(), Figure.TASK);
        double cpu = mean(e.getValue().values(), Figure.CPU);
        double[] sorted = resamples[qi++].clone();
        Arrays.sort(sorted);
        rows.add(
            new Row(
                config,
                e.getKey(),
                e.getValue().size(),
                Math.exp(wall),
                Math.exp(percentile(sorted, 0.025)),
                Math.exp(percentile(sorted, 0.975)),
                Math.exp(task),
                Math.exp(cpu)));
        wallSum += wall;
        taskSum += task;
        cpuSum += cpu;
        rounds = Math.max(rounds, e.getValue().size());
      }
      double[] set = resamples[pairs.size()];
      Arrays.sort(set);
      rows.add(
          new Row(
              config,
              "all",
              rounds,
              Math.exp(wallSum / pairs.size()),
              Math.exp(percentile(set, 0.025)),
              Math.exp(percentile(set, 0.975)),
              Math.exp(taskSum / pairs.size()),
              Math.exp(cpuSum / pairs.size())));
    }
    return rows;
  }

  /** Per non-reference configuration and session: the set's paired wall ratio in that session. */
  public static List<SessionRow> perSession(RunResult r) {
    List<SessionRow> rows = new ArrayList<>();
    for (int c = 1; c < r.configs().size(); c++) {
      String config = r.configs().get(c).name();
      Map<String, Map<Integer, Pair>> pairs = pairsByQuery(r, config);
      Map<Integer, List<Integer>> sessions = roundsBySession(pairs);
      for (Map.Entry<Integer, List<Integer>> s : sessions.entrySet()) {
        double sum = 0;
        int queries = 0;
        for (Map<Integer, Pair> q : pairs.values()) {
          List<Pair> in = new ArrayList<>();
          s.getValue().forEach(round -> in.add(q.get(round)));
          in.removeIf(Objects::isNull);
          if (!in.isEmpty()) {
            sum += mean(in, Figure.WALL);
            queries++;
          }
        }
        if (queries > 0) {
          rows.add(
              new SessionRow(config, s.getKey(), s.getValue().size(), Math.exp(sum / queries)));
        }
      }
    }
    return rows;
  }

  /**
   * Resampled log ratios: row i < queries is query i's mean over the drawn rounds, the last row the
   * mean over queries; each column one draw of sessions, then of rounds within each.
   */
  private static double[][] bootstrap(Map<String, Map<Integer, Pair>> pairs) {
    List<List<Integer>> sessions = new ArrayList<>(roundsBySession(pairs).values());
    List<Map<Integer, Pair>> queries = new ArrayList<>(pairs.values());
    double[][] out = new double[queries.size() + 1][RESAMPLES];
    SplittableRandom random = new SplittableRandom(SEED);
    List<Integer> drawn = new ArrayList<>();
    for (int i = 0; i < RESAMPLES; i++) {
      drawn.clear();
      for (int s = 0; s < sessions.size(); s++) {
        List<Integer> rounds = sessions.get(random.nextInt(sessions.size()));
        for (int k = 0; k < rounds.size(); k++) {
          drawn.add(rounds.get(random.nextInt(rounds.size())));
        }
      }
      double setSum = 0;
      int setQueries = 0;
      for (int q = 0; q < queries.size(); q++) {
        double sum = 0;
        int n = 0;
        for (int round : drawn) {
          Pair p = queries.get(q).get(round);
          if (p != null) {
            sum += p.wall();
            n++;
          }
        }
        // A draw without this query's rounds (it failed in some sessions) keeps its point value.
        double v = n > 0 ? sum / n : mean(queries.get(q).values(), Figure.WALL);
        out[q][i] = v;
        setSum += v;
        setQueries++;
      }
      out[queries.size()][i] = setSum / setQueries;
    }
    return out;
  }

  /** Per query with any paired round: round → its pair, timed rounds only. */
  private static Map<String, Map<Integer, Pair>> pairsByQuery(RunResult r, String config) {
    Map<String, Map<Integer, Pair>> out = new LinkedHashMap<>();
    for (String q : r.queries()) {
      Map<Integer, Measurement> ref = new TreeMap<>();
      for (Measurement m : r.measurements()) {
        if (!m.warmup() && m.query().equals(q) && m.config().equals(r.reference())) {
          ref.put(m.round(), m);
        }
      }
      Map<Integer, Pair> byRound = new TreeMap<>();
      for (Measurement m : r.measurements()) {
        Measurement base = ref.get(m.round());
        if (m.warmup() || !m.query().equals(q) || !m.config().equals(config) || base == null) {
          continue;
        }
        if (m.wallMs() <= 0 || base.wallMs() <= 0) {
          continue;
        }
        double task = logRatio(base.metrics().executorRunMs(), m.metrics().executorRunMs());
        double cpu = logRatio(base.metrics().executorCpuMs(), m.metrics().executorCpuMs());
        byRound.put(
            m.round(), new Pair(m.session(), Math.log(base.wallMs() / m.wallMs()), task, cpu));
      }
      if (!byRound.isEmpty()) {
        out.put(q, byRound);
      }
    }
    return out;
  }

  /** Session → the rounds in which any query was paired, in order. */
  private static Map<Integer, List<Integer>> roundsBySession(
      Map<String, Map<Integer, Pair>> pairs) {
    Map<Integer, TreeSet<Integer>> sets = new TreeMap<>();
    for (Map<Integer, Pair> q : pairs.values()) {
      q.forEach((round, p) -> sets.computeIfAbsent(p.session(), s -> new TreeSet<>()).add(round));
    }
    Map<Integer, List<Integer>> out = new TreeMap<>();
    sets.forEach((s, rounds) -> out.put(s, new ArrayList<>(rounds)));
    return out;
  }

  /** log(reference / value), or 0 (no difference) when either was not measured. */
  private static double logRatio(long reference, long value) {
    return reference > 0 && value > 0 ? Math.log((double) reference / value) : 0;
  }

  private static double mean(Iterable<Pair> pairs, Figure figure) {
    double sum = 0;
    int n = 0;
    for (Pair p : pairs) {
      sum +=
          switch (figure) {
            case WALL -> p.wall();
            case TASK -> p.task();
            case CPU -> p.cpu();
          };
      n++;
    }
    return sum / n;
  }

  /** Linear interpolation between the closest ranks of sorted values. */
  static double percentile(double[] sorted, double p) {
    double rank = p * (sorted.length - 1);
    int lo = (int) Math.floor(rank);
    int hi = Math.min(sorted.length - 1, lo + 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
  }
}
