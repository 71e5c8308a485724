package io.memwire.shuffle.service;

import io.memwire.transfer.TransferNode;
import io.memwire.transfer.metrics.TransportMetrics;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Builds {@link ShuffleService#stats()}: the service's own counts ({@link ServiceStats}) and state,
 * read from its lifecycle, applications, clients, quotas and counters, and its transfer node's
 * counters under {@link ShuffleService#NODE_PREFIX}.
 *
 * <p>Threads: any thread; it holds no state of its own and reads parts that are safe to read
 * concurrently, so a snapshot is a consistent view of each counter, not of all of them at once.
 */
final class StatsSnapshot {
  private final ServiceLifecycle lifecycle;
  private final ServiceConfig config;
  private final TransferNode node;
  private final Applications applications;
  private final ClientAcceptor clients;
  private final Quotas quotas;
  private final ServiceCounters counters;
  private final long maxOutputs;

  StatsSnapshot(
      ServiceLifecycle lifecycle,
      ServiceConfig config,
      TransferNode node,
      Applications applications,
      ClientAcceptor clients,
      Quotas quotas,
      ServiceCounters counters,
      long maxOutputs) {
    this.lifecycle = lifecycle;
    this.config = config;
    this.node = node;
    this.applications = applications;
    this.clients = clients;
    this.quotas = quotas;
    this.counters = counters;
    this.maxOutputs = maxOutputs;
  }

  /** The stats now. */
  Map<String, Long> take() {
    Map<String, Long> m = new LinkedHashMap<>();
    long fileBytes = 0;
    long directoryBytes = 0;
    for (Application a : applications.all()) {
      fileBytes += a.held()[1];
      directoryBytes += a.directoryBytes();
    }
    long lag = applications.cleanupLagNanos(System.nanoTime());
    Map<String, Long> transfer = node.stats().asMap();
    m.put(ServiceStats.READY.name(), lifecycle.get() == ShuffleService.State.READY ? 1L : 0L);
    m.put(ServiceStats.APPLICATIONS.name(), (long) applications.size());
    m.put(ServiceStats.CLIENTS.name(), (long) clients.sessions());
    m.put(ServiceStats.OUTPUTS_HELD.name(), quotas.outputsHeld());
    m.put(ServiceStats.BYTES_HELD.name(), fileBytes);
    counters.putCounts(m); // and recovery drops and refusals by reason
    m.put(ServiceStats.QUOTA_REFUSALS.name(), quotas.refusals());
    m.put(ServiceStats.DIRECTORY_BYTES.name(), directoryBytes);
    m.put(ServiceStats.MAX_OUTPUTS.name(), maxOutputs);
    m.put(ServiceStats.REGISTRATION_BUDGET.name(), config.transfer().registrationBudget());
    m.put(
        ServiceStats.TRANSFER_CONNECTIONS.name(),
        transfer.getOrDefault(TransportMetrics.SERVING_SESSIONS.name(), 0L)
            + transfer.getOrDefault(TransportMetrics.VERBS_CONNECTIONS.name(), 0L));
    m.put(ServiceStats.CLEANUP_LAG.name(), TimeUnit.NANOSECONDS.toMicros(lag));
    m.put(
        ServiceStats.RECOVERING.name(),
        lifecycle.get() == ShuffleService.State.RECOVERING ? 1L : 0L);
    quotas.refusalsByLimit().forEach((k, v) -> m.put(ServiceStats.REFUSALS.of(k).name(), v));
    transfer.forEach((k, v) -> m.put(ShuffleService.NODE_PREFIX + k, v));
    return m;
  }
}
