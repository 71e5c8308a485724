package io.memwire.tpcds.run;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Round orders: balanced positions and predecessors over k! timed rounds. */
class RoundOrderTest {

  @Test
  void warmUpsAndTheFirstTimedRoundRunTheReferenceFirst() {
    assertArrayEquals(new int[] {0, 1, 2}, RoundOrder.of(3, -1));
    assertArrayEquals(new int[] {0, 1, 2}, RoundOrder.of(3, 0));
    assertArrayEquals(new int[] {0}, RoundOrder.of(1, 5));
    assertArrayEquals(new int[] {1, 0}, RoundOrder.of(2, 1));
    assertArrayEquals(RoundOrder.of(3, 1), RoundOrder.of(3, 7));
  }

  @Test
  void overKFactorialRoundsEachPositionAndEachPredecessorComesEquallyOften() {
    for (int k = 2; k <= 5; k++) {
      int rounds = 1;
      for (int i = 2; i <= k; i++) {
        rounds *= i;
      }
      int[][] atPosition = new int[k][k];
      int[][] after = new int[k][k];
      Set<String> seen = new HashSet<>();
      for (int r = 0; r < rounds; r++) {
        int[] order = RoundOrder.of(k, r);
        seen.add(Arrays.toString(order));
        for (int p = 0; p < k; p++) {
          atPosition[order[p]][p]++;
          if (p > 0) {
            after[order[p]][order[p - 1]]++;
          }
        }
      }
      assertEquals(rounds, seen.size(), "every permutation once for k=" + k);
      for (int c = 0; c < k; c++) {
        for (int o = 0; o < k; o++) {
          assertEquals(rounds / k, atPosition[c][o], "k=" + k + " config " + c + " position " + o);
          if (c != o) {
            assertEquals(rounds / k, after[c][o], "k=" + k + " config " + c + " after " + o);
          }
        }
      }
    }
  }

  @Test
  void tooManyConfigurationsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> RoundOrder.of(21, 0));
    assertThrows(IllegalArgumentException.class, () -> RoundOrder.of(0, 0));
  }
}
