package io.memwire.transfer.fabric;

import java.util.List;

/**
 * The NIC counters over one run, for a benchmark's or job's report: {@link #open} samples every
 * device, {@link #lines} samples again and says what changed ({@link FabricReport#lines}), so a
 * ratio is never shown without the fabric's health beside it. On a node without RDMA devices the
 * lines are one line saying so.
 */
public final class FabricWindow {
  private final NicCounters counters;
  private final CounterSample start;

  private FabricWindow(NicCounters counters) {
    this.counters = counters;
    this.start = counters.sample();
  }

  /** Starts a window on this machine's counters. */
  public static FabricWindow open() {
    return open(NicCounters.system());
  }

  /** Starts a window on {@code counters}. */
  public static FabricWindow open(NicCounters counters) {
    return new FabricWindow(counters);
  }

  /** The deltas since {@link #open}. */
  public CounterDeltas deltas() {
    return counters.sample().since(start);
  }

  /** The report lines of the deltas since {@link #open}. */
  public List<String> lines() {
    return FabricReport.lines(deltas());
  }
}
