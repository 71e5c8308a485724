package io.memwire.tpcds.run;

import java.util.ArrayList;
import java.util.List;

/**
 * The order in which the configurations run a query in one round. Warm-up rounds keep the listed
 * order (the reference first, so its answer is the one kept). Timed round {@code i} takes the
 * {@code i mod k!}-th permutation of the {@code k} configurations in lexicographic order, so over
 * {@code k!} timed rounds each configuration runs at each position, and right after each other
 * configuration, equally often. A plain rotation would do the first but not the second: with three
 * or more configurations each would always follow the same one, and whatever a query leaves behind
 * in its cluster's JVMs (compilations finishing, a collection) would always land on the same
 * neighbour.
 */
final class RoundOrder {
  /** The most configurations a run takes (20! still fits a long). */
  static final int MAX_CONFIGS = 20;

  private RoundOrder() {}

  /**
   * Indexes into the configuration list, in running order.
   *
   * @param configs how many configurations
   * @param timedRound 0-based count of timed rounds before this one (over all sessions), or -1 for
   *     a warm-up round
   */
  static int[] of(int configs, int timedRound) {
    if (configs < 1 || configs > MAX_CONFIGS) {
      throw new IllegalArgumentException("1 to " + MAX_CONFIGS + " configurations, got " + configs);
    }
    int[] order = new int[configs];
    if (timedRound < 0) {
      for (int i = 0; i < configs; i++) {
        order[i] = i;
      }
      return order;
    }
    long factorial = 1;
    for (int i = 2; i <= configs; i++) {
      factorial *= i;
    }
    // Decode the permutation's number in the factorial number system.
    long rest = timedRound % factorial;
    List<Integer> left = new ArrayList<>();
    for (int i = 0; i < configs; i++) {
      left.add(i);
    }
    for (int i = 0; i < configs; i++) {
      factorial /= configs - i;
      order[i] = left.remove((int) (rest / factorial));
      rest %= factorial;
    }
    return order;
  }
}
