package io.memwire.tpcds.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.tpcds.run.Measurement;
import io.memwire.tpcds.run.RunResult;
import io.memwire.tpcds.run.ShuffleConfig;
import io.memwire.tpcds.worker.ShuffleMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Paired-round speed-ups: ratios within a round, their geometric means and intervals. */
class PairedSpeedupTest {

  @Test
  void aConfigurationTwiceAsFastInEveryRoundIsTwiceAsFastWithANarrowInterval() {
    List<Measurement> ms = new ArrayList<>();
    for (int round = 0; round < 10; round++) {
      // Rounds drift by a factor of up to 3; within a round the ratio is exactly 2.
      double drift = 1 + (round % 3);
      ms.add(m("q1", "sort", round, 1000 * drift, 800));
      ms.add(m("q1", "fast", round, 500 * drift, 400));
    }
    List<PairedSpeedup.Row> rows = PairedSpeedup.of(result(ms, "q1"));
    assertEquals(2, rows.size());
    PairedSpeedup.Row q1 = rows.get(0);
    assertEquals("q1", q1.query());
    assertEquals(10, q1.rounds());
    assertEquals(2.0, q1.wall(), 1e-9);
    assertEquals(2.0, q1.low(), 1e-9);
    assertEquals(2.0, q1.high(), 1e-9);
    assertEquals(2.0, q1.taskTime(), 1e-9);
    assertEquals(2.0, q1.taskCpu(), 1e-9);
    assertEquals("all", rows.get(1).query());
    assertEquals(2.0, rows.get(1).wall(), 1e-9);
  }

  @Test
  void noisyRoundsGiveAnIntervalAroundTheGeometricMeanAndWarmUpsAreLeftOut() {
    List<Measurement> ms = new ArrayList<>();
    double[] ratios = {0.9, 1.1, 1.0, 0.95, 1.05, 1.2, 0.85, 1.0};
    ms.add(m("q1", "sort", 0, 1000, 100, true));
    ms.add(m("q1", "other", 0, 100, 100, true)); // a warm-up 10x faster: not counted
    double logSum = 0;
    for (int i = 0; i < ratios.length; i++) {
      ms.add(m("q1", "sort", i + 1, 1000, 100));
      ms.add(m("q1", "other", i + 1, 1000 / ratios[i], 100));
      logSum += Math.log(ratios[i]);
    }
    PairedSpeedup.Row q1 = PairedSpeedup.of(result(ms, "q1")).get(0);
    assertEquals(ratios.length, q1.rounds());
    assertEquals(Math.exp(logSum / ratios.length), q1.wall(), 1e-9);
    assertTrue(q1.low() < q1.wall() && q1.wall() < q1.high(), q1.toString());
    assertTrue(q1.low() > 0.85 && q1.high() < 1.2, q1.toString());
    assertTrue(q1.low() < 1 && q1.high() > 1, "this run cannot tell them apart: " + q1);
  }

  @Test
  void roundsWithoutTheReferenceArePassedOverAndTheSetAveragesQueries() {
    List<Measurement> ms = new ArrayList<>();
    for (int round = 0; round < 4; round++) {
      ms.add(m("q1", "sort", round, 1000, 100));
      ms.add(m("q1", "other", round, 500, 100));
      ms.add(m("q2", "other", round, 500, 100));
      if (round < 2) {
        ms.add(m("q2", "sort", round, 2000, 100));
      }
    }
    List<PairedSpeedup.Row> rows = PairedSpeedup.of(result(ms, "q1", "q2"));
    assertEquals(3, rows.size());
    assertEquals(2, rows.get(1).rounds());
    assertEquals(4.0, rows.get(1).wall(), 1e-9);
    assertEquals(Math.sqrt(2.0 * 4.0), rows.get(2).wall(), 1e-9);
    assertEquals(1.0, rows.get(2).taskTime(), 1e-9);
  }

  @Test
  void clustersThatDisagreeWidenTheIntervalBeyondWhatTheirRoundsSay() {
    // Two sessions of 10 rounds: one cluster pair makes "other" 10% faster in every round, the
    // next 10% slower. Rounds alone would give a tight interval around 1; the sessions do not.
    List<Measurement> ms = new ArrayList<>();
    for (int session = 0; session < 2; session++) {
      double ratio = session == 0 ? 1.1 : 1 / 1.1;
      for (int k = 0; k < 10; k++) {
        int round = session * 10 + k;
        double noise = 1 + 0.02 * ((k % 3) - 1);
        for (String q : List.of("q1", "q2")) {
          ms.add(m(q, "sort", session, round, 1000, 100, false));
          ms.add(m(q, "other", session, round, 1000 / (ratio * noise), 100, false));
        }
      }
    }
    RunResult r = result(ms, "q1", "q2");
    PairedSpeedup.Row all = PairedSpeedup.of(r).get(2);
    assertEquals("all", all.query());
    assertEquals(20, all.rounds());
    assertEquals(1.0, all.wall(), 0.01);
    assertTrue(all.low() < 0.93 && all.high() > 1.07, all.toString());

    List<PairedSpeedup.SessionRow> sessions = PairedSpeedup.perSession(r);
    assertEquals(2, sessions.size());
    assertEquals(0, sessions.get(0).session());
    assertEquals(10, sessions.get(0).rounds());
    assertEquals(1.1, sessions.get(0).wall(), 0.01);
    assertEquals(1 / 1.1, sessions.get(1).wall(), 0.01);
  }

  private static Measurement m(String q, String config, int round, double wallMs, long taskMs) {
    return m(q, config, round, wallMs, taskMs, false);
  }

  private static Measurement m(
      String q, String config, int round, double wallMs, long taskMs, boolean warmup) {
    return m(q, config, 0, round, wallMs, taskMs, warmup);
  }

  private static Measurement m(
      String q, String config, int session, int round, double wallMs, long taskMs, boolean warmup) {
    return new Measurement(
        q,
        config,
        session,
        round,
        warmup,
        wallMs,
        1,
        new ShuffleMetrics(1, taskMs, 0, 0, 0, 0, 0, 0, 0, 0, taskMs / 2, 0, 0),
        null);
  }

  private static RunResult result(List<Measurement> ms, String... queries) {
    List<ShuffleConfig> configs = new ArrayList<>();
    for (Measurement m : ms) {
      if (configs.stream().noneMatch(c -> c.name().equals(m.config()))) {
        configs.add(ShuffleConfig.of(m.config(), "sort", Map.of()));
      }
    }
    configs.sort((a, b) -> a.name().equals("sort") ? -1 : b.name().equals("sort") ? 1 : 0);
    return new RunResult(
        "dir",
        Map.of(),
        List.of(),
        configs,
        List.of(queries),
        null,
        ms,
        List.of(),
        Map.of(),
        Map.of(),
        true,
        null,
        List.of());
  }
}
