package io.memwire.mainjob;

import io.memwire.localcluster.ExecutorCpu;
import java.util.HashMap;
import java.util.Map;

/**
 * The executors' CPU around a phase of the main job, when it can be measured: the driver runs
 * {@code local-cluster} (executors are its child processes), on Linux, with Memwire's local-cluster
 * jar on the driver's classpath (the main-job launcher passes it). Anywhere else the figures are
 * absent, and the application runs as before.
 */
final class ExecutorCpuProbe {
  private ExecutorCpuProbe() {}

  /** A snapshot to pass to {@link #since}, or null when not measurable. */
  static Object take() {
    try {
      return ExecutorCpu.available() ? ExecutorCpu.take() : null;
    } catch (NoClassDefFoundError e) {
      return null;
    }
  }

  /**
   * Nanoseconds since {@code before}: {@code serving} (threads that send blocks: Spark's Netty
   * server; Memwire's tcp serving loops; verbs threads), {@code transport} (those and the reading
   * side's: Spark's Netty client, Memwire's tcp reading loops) and {@code executor} (whole JVMs).
   * Empty when not measurable or no executor was found.
   */
  static Map<String, Long> since(Object before) {
    Map<String, Long> m = new HashMap<>();
    if (!(before instanceof ExecutorCpu.Snapshot b)) {
      return m;
    }
    ExecutorCpu.Snapshot d = ExecutorCpu.take().since(b);
    if (d.pids().isEmpty()) {
      return m;
    }
    m.put("serving", d.servingNanos());
    m.put("transport", d.transportNanos());
    m.put("executor", d.nanos(ExecutorCpu.Group.PROCESS));
    m.put("jit", d.nanos(ExecutorCpu.Group.JIT));
    return m;
  }
}
