package io.memwire.shuffle.service;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends applications whose driver is gone. Each round probes every driver that is due at once
 * ({@link DriverProbes}, each probe bounded): a driver's RPC port listens for the whole life of its
 * SparkContext, so a port that refuses connections for a few seconds means the driver stopped or
 * crashed, and one that accepts nothing for {@code appTimeout} means its host is gone. Runs on the
 * service's liveness thread only.
 */
final class DriverLiveness {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleService.class);

  private final Applications apps;
  private final ServiceCounters counters;
  private final BooleanSupplier closed;
  private final Duration appTimeout;

  /** How often a driver that answers is probed. */
  private final long probeEveryNanos;

  /** The liveness thread's period; also how soon a refused probe is repeated. */
  private final long tickNanos;

  /** How long a driver's port must refuse every probe before its application ends. */
  private final long refusedGraceNanos;

  DriverLiveness(
      Applications apps, ServiceCounters counters, Duration appTimeout, BooleanSupplier closed) {
    this.apps = apps;
    this.counters = counters;
    this.closed = closed;
    this.appTimeout = appTimeout;
    long timeoutMs = appTimeout.toMillis();
    this.probeEveryNanos =
        TimeUnit.MILLISECONDS.toNanos(Math.max(250, Math.min(10_000, timeoutMs / 4)));
    this.tickNanos = Math.min(probeEveryNanos, TimeUnit.SECONDS.toNanos(1));
    // Refusals that last across a few probes mean the driver stopped (or crashed); a silent host
    // waits appTimeout.
    this.refusedGraceNanos =
        Math.min(TimeUnit.MILLISECONDS.toNanos(timeoutMs), TimeUnit.SECONDS.toNanos(5));
  }

  /** The period the liveness thread calls {@link #probe} with. */
  long tickNanos() {
    return tickNanos;
  }

  /** How long a refusing driver port is given before its application ends. */
  long refusedGraceNanos() {
    return refusedGraceNanos;
  }

  /** One round: probes the drivers that are due and ends the applications whose driver is gone. */
  void probe() {
    try {
      probeOnce();
    } catch (IOException | RuntimeException e) {
      LOG.warn("shuffle service: driver probes failed this round: {}", e.toString());
    }
  }

  private void probeOnce() throws IOException {
    long start = System.nanoTime();
    Map<Application, InetSocketAddress> due = new LinkedHashMap<>();
    for (Application a : apps.all()) {
      if (start - a.nextProbeNanos() >= 0) {
        due.put(a, a.driver());
      }
    }
    if (due.isEmpty() || closed.getAsBoolean()) {
      return;
    }
    long timeout = Math.min(2000, Math.max(100, appTimeout.toMillis() / 4));
    Map<Application, DriverProbes.Result> results = DriverProbes.probe(due, timeout);
    counters.driverProbes.add(results.size());
    long now = System.nanoTime();
    for (Map.Entry<Application, DriverProbes.Result> r : results.entrySet()) {
      if (closed.getAsBoolean()) {
        return;
      }
      Application a = r.getKey();
      DriverProbes.Result probe = r.getValue();
      if (probe == DriverProbes.Result.ANSWERS) {
        a.alive(now);
      }
      if (probe != DriverProbes.Result.REFUSED) {
        a.refusedSince(0);
        a.nextProbe(now + probeEveryNanos);
      } else if (a.refusedSinceNanos() == 0) {
        a.refusedSince(now);
        a.nextProbe(now + tickNanos); // confirm soon: a refused port is a driver that is gone
      } else if (now - a.refusedSinceNanos() >= refusedGraceNanos) {
        apps.end(
            a,
            "is over: its driver's RPC port " + Applications.driverOf(a) + " refuses connections");
        continue;
      } else {
        a.nextProbe(now + tickNanos);
      }
      if (now - a.lastAliveNanos() > appTimeout.toNanos()) {
        apps.end(
            a,
            "is over: its driver at "
                + Applications.driverOf(a)
                + " has not accepted a connection for "
                + appTimeout.toMillis()
                + " ms");
      }
    }
  }
}
