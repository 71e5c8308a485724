package io.memwire.shuffle.service;

import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The service's two periodic jobs, each on its own daemon thread: {@code
 * memwire-shuffle-service-liveness} probes drivers and ends applications ({@link DriverLiveness}),
 * {@code memwire-shuffle-service-deadlines} closes connections past their deadlines ({@link
 * ClientAcceptor#enforceDeadlines}). Separate threads, so a slow probe never delays a deadline.
 */
final class PeriodicTasks {
  private final ScheduledExecutorService liveness =
      daemonScheduler("memwire-shuffle-service-liveness");
  private final ScheduledExecutorService deadlines =
      daemonScheduler("memwire-shuffle-service-deadlines");

  private static ScheduledExecutorService daemonScheduler(String name) {
    return Executors.newSingleThreadScheduledExecutor(
        r -> {
          Thread t = new Thread(r, name);
          t.setDaemon(true);
          return t;
        });
  }

  /** Starts probing drivers every {@code drivers.tickNanos()} and enforcing deadlines. */
  void start(DriverLiveness drivers, ClientAcceptor clients) {
    long tick = TimeUnit.NANOSECONDS.toMillis(drivers.tickNanos());
    // Both tasks catch and log their own failures: a periodic task that threw would stop silently.
    var unusedProbes =
        liveness.scheduleWithFixedDelay(drivers::probe, tick, tick, TimeUnit.MILLISECONDS);
    var unusedDeadlines =
        deadlines.scheduleWithFixedDelay(
            clients::enforceDeadlines, 100, 100, TimeUnit.MILLISECONDS);
  }

  /** Stops both threads and waits (bounded) until they ended. */
  void stop() {
    for (ScheduledExecutorService e : List.of(liveness, deadlines)) {
      e.shutdownNow();
      try {
        e.awaitTermination(10, TimeUnit.SECONDS);
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
