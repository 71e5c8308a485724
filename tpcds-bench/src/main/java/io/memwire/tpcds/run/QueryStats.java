package io.memwire.tpcds.run;

import java.util.Arrays;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * Statistics of the timed executions of one query with one configuration: wall-time median, minimum
 * and maximum, and the medians of the shuffle metrics (sizes in bytes, times in ms). {@code
 * oneSidedBytes} and {@code notOneSidedBytes} (Spark's remote bytes that did not arrive one-sided)
 * are NaN when the shuffle manager keeps no counters.
 */
public record QueryStats(
    String query,
    String config,
    int runs,
    double medianMs,
    double minMs,
    double maxMs,
    double bytesWritten,
    double localBytesRead,
    double remoteBytesRead,
    double fetchWaitMs,
    double recordsRead,
    double executorRunMs,
    double oneSidedBytes,
    double notOneSidedBytes) {

  /** Statistics of {@code timed} (all of one query and configuration, at least one). */
  public static QueryStats of(String query, String config, List<Measurement> timed) {
    if (timed.isEmpty()) {
      throw new IllegalArgumentException("no timed runs of " + query + " with " + config);
    }
    return new QueryStats(
        query,
        config,
        timed.size(),
        median(timed, Measurement::wallMs),
        timed.stream().mapToDouble(Measurement::wallMs).min().orElseThrow(),
        timed.stream().mapToDouble(Measurement::wallMs).max().orElseThrow(),
        median(timed, m -> m.metrics().bytesWritten()),
        median(timed, m -> m.metrics().localBytesRead()),
        median(timed, m -> m.metrics().remoteBytesRead()),
        median(timed, m -> m.metrics().fetchWaitMs()),
        median(timed, m -> m.metrics().recordsRead()),
        median(timed, m -> m.metrics().executorRunMs()),
        median(timed, m -> m.path() == null ? Double.NaN : m.path().oneSidedBytes()),
        median(
            timed,
            m ->
                m.path() == null
                    ? Double.NaN
                    : m.path().notOneSidedBytes(m.metrics().remoteBytesRead())));
  }

  /** (max - min) / median of the wall time, in percent: how noisy the runs were. */
  public double spreadPercent() {
    return medianMs == 0 ? 0 : 100 * (maxMs - minMs) / medianMs;
  }

  static double median(List<Measurement> runs, ToDoubleFunction<Measurement> value) {
    double[] v = runs.stream().mapToDouble(value).sorted().toArray();
    int n = v.length;
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

  /** Geometric mean of positive values (NaN when empty). */
  public static double geometricMean(double... values) {
    if (values.length == 0) {
      return Double.NaN;
    }
    return Math.exp(Arrays.stream(values).map(Math::log).sum() / values.length);
  }
}
