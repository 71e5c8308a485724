package io.memwire.flight;

import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.flight.wire.WireException;
import java.util.ArrayList;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.flight.FlightStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The RDMA exchanges one {@link RdmaFlightProducer} serves. It admits a DoExchange (a request that
 * decodes, the same provider, the data plane open and allowed, one of {@code maxExchanges} slots
 * free; else a typed error the client can fall back on), runs its {@link ServerSession} on the
 * handler thread, and keeps the running sessions for the counters, the lease timer and close. It
 * owns the pump threads ({@code memwire-flight-N-exchange-*}, one per running exchange) and the
 * lease timer ({@code memwire-flight-N-leases}).
 */
final class RdmaExchanges {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaExchanges.class);

  private final ServerResources resources;
  private final Semaphore slots;

  /** Why the data plane is off (verbs on an untrusted fabric), or null when it serves. */
  private final String refusal;

  private final Set<ServerSession> sessions = ConcurrentHashMap.newKeySet();
  private final ExecutorService pumps;
  private final ScheduledExecutorService timer;
  private volatile boolean closed;

  /**
   * @param id the producer's number in thread names
   * @param refusal why the data plane must not serve, or null
   */
  RdmaExchanges(ServerResources resources, String refusal, int id) {
    this.resources = resources;
    int maxExchanges = resources.maxExchanges();
    this.slots = new Semaphore(maxExchanges);
    this.refusal = refusal;
    AtomicInteger threads = new AtomicInteger();
    // One client-message pump per exchange; at most maxExchanges exchanges run at once.
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            maxExchanges,
            maxExchanges,
            30,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t =
                  new Thread(r, "memwire-flight-" + id + "-exchange-" + threads.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    pool.allowCoreThreadTimeOut(true);
    this.pumps = pool;
    this.timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "memwire-flight-" + id + "-leases");
              t.setDaemon(true);
              return t;
            });
    long tick = Math.max(10, Math.min(1000, resources.leaseTimeout().toMillis() / 4));
    var unused = timer.scheduleWithFixedDelay(this::checkLeases, tick, tick, TimeUnit.MILLISECONDS);
  }

  /**
   * Serves one data-plane DoExchange on the calling handler thread until it ends, or refuses it
   * with an error that carries its {@link FallbackReason}.
   *
   * @param command the descriptor's command, an exchange request
   */
  void serve(
      FlightProducer.CallContext context,
      byte[] command,
      FlightStream reader,
      FlightProducer.ServerStreamListener writer) {
    ExchangeRequest request;
    try {
      request = ExchangeRequest.fromBytes(command);
    } catch (WireException e) {
      writer.error(
          FallbackReason.NOT_SERVED.error(CallStatus.INVALID_ARGUMENT, e.getMessage(), null));
      return;
    }
    if (request.provider() != resources.node().provider()) {
      writer.error(
          FallbackReason.NOT_SERVED.error(
              CallStatus.INVALID_ARGUMENT,
              "this server's "
                  + "data plane uses the "
                  + resources.node().provider()
                  + " provider, the client asked for "
                  + request.provider(),
              null));
      return;
    }
    if (closed) {
      writer.error(
          FallbackReason.NOT_SERVED.error(
              CallStatus.UNAVAILABLE, "RDMA data plane is closed", null));
      return;
    }
    if (refusal != null) {
      writer.error(
          FallbackReason.NOT_SERVED.error(
              CallStatus.UNAVAILABLE, "RDMA data plane is off: " + refusal, null));
      return;
    }
    if (!slots.tryAcquire()) {
      // The typed reason lets an auto client take plain DoGet instead.
      resources.stats().sessionsRefused.increment();
      writer.error(
          FallbackReason.AT_CAPACITY.error(
              CallStatus.RESOURCE_EXHAUSTED,
              "the server "
                  + "runs its most RDMA exchanges at once ("
                  + FlightSettings.MAX_EXCHANGES.name(FlightSettings.SERVER_PREFIX)
                  + "="
                  + resources.maxExchanges()
                  + "); use DoGet or retry later",
              null));
      return;
    }
    try {
      ServerSession session =
          new ServerSession(resources, pumps, sessions::remove, context, reader, writer, request);
      sessions.add(session);
      resources.stats().sessionsStarted.increment();
      try {
        session.run();
      } finally {
        sessions.remove(session);
      }
    } finally {
      slots.release();
    }
  }

  /** Puts the current {@code activeSessions}, {@code leasedBatches} and {@code leasedBytes}. */
  void putCurrent(Map<String, Long> m) {
    long batches = 0;
    long bytes = 0;
    for (ServerSession s : sessions) {
      batches += s.leasedBatches();
      bytes += s.leasedBytes();
    }
    m.put(FlightStatsMetrics.ACTIVE_SESSIONS.name(), (long) sessions.size());
    m.put(FlightStatsMetrics.LEASED_BATCHES.name(), batches);
    m.put(FlightStatsMetrics.LEASED_BYTES.name(), bytes);
  }

  private void checkLeases() {
    long now = System.nanoTime();
    for (ServerSession s : sessions) {
      try {
        s.checkLeases(now);
      } catch (RuntimeException e) {
        LOG.warn("lease check failed", e);
      }
    }
  }

  /**
   * Refuses new exchanges, cancels the running ones (their leases are released) and stops the pump
   * threads and the lease timer, waiting up to 5 s for each.
   */
  void close() {
    closed = true;
    for (ServerSession s : new ArrayList<>(sessions)) {
      s.cancel("producer closed");
    }
    timer.shutdownNow();
    pumps.shutdownNow();
    try {
      pumps.awaitTermination(5, TimeUnit.SECONDS);
      timer.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
