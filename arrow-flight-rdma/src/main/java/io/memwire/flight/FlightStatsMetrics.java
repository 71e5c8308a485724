package io.memwire.flight;

import static io.memwire.transfer.metrics.Metric.Unit.BYTES;
import static io.memwire.transfer.metrics.Metric.Unit.COUNT;
import static io.memwire.transfer.metrics.Metric.counter;
import static io.memwire.transfer.metrics.Metric.gauge;

import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.Metrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The Flight module's metrics, each declared once: the keys of {@link RdmaFlightProducer#stats()}
 * ({@link #SERVER}) and {@link RdmaFlightClient#stats()} ({@link #CLIENT}). The stats are keyed by
 * these names, {@code flight.metrics.FlightMetrics} exports exactly these, and docs/FLIGHT.md shows
 * the tables {@link #main} prints.
 */
public final class FlightStatsMetrics {
  private FlightStatsMetrics() {}

  // Server: exchanges.

  public static final Metric SESSIONS_STARTED =
      counter("sessionsStarted", COUNT, "RDMA exchanges started.");
  public static final Metric SESSIONS_REFUSED =
      counter(
          "sessionsRefused",
          COUNT,
          "RDMA exchanges refused at `maxExchanges` (RESOURCE_EXHAUSTED; auto clients take DoGet).");
  public static final Metric SESSIONS_CANCELLED =
      counter("sessionsCancelled", COUNT, "RDMA exchanges cancelled (client gone or cancelled).");

  // Server: batches and leases.

  public static final Metric BATCHES_COPIED =
      counter("batchesCopied", COUNT, "Batches copied into the producer's arenas to be leased.");
  public static final Metric BATCHES_IN_PLACE =
      counter("batchesInPlace", COUNT, "Batches of a zero-copy producer leased where they are.");
  public static final Metric BODY_BYTES =
      counter("bodyBytes", BYTES, "Body bytes of the batches leased.");
  public static final Metric LEASES_FREED =
      counter("leasesFreed", COUNT, "Leases the client freed with FREE.");
  public static final Metric FREE_MESSAGES =
      counter(
          "freeMessages",
          COUNT,
          "FREE messages received; below `leasesFreed` as the client groups its FREEs.");
  public static final Metric LEASES_RELEASED_UNFREED =
      counter(
          "leasesReleasedUnfreed",
          COUNT,
          "Leases ended without the client's FREE (cancel, crash, end of exchange).");
  public static final Metric LEASES_EXPIRED =
      counter("leasesExpired", COUNT, "Leases ended by `leaseTimeout` (the exchange failed).");
  public static final Metric CREDIT_WAITS =
      counter("creditWaits", COUNT, "Times `putNext` waited for the client's credit window.");
  public static final Metric LEASES_FAILED =
      counter(
          "leasesFailed",
          COUNT,
          "Batches that could not be leased (memory limit, registration); the exchange failed.");
  public static final Metric PEAK_LEASED_BYTES =
      gauge("peakLeasedBytes", BYTES, "Most body bytes leased at once to one exchange.");
  public static final Metric ACTIVE_SESSIONS =
      gauge("activeSessions", COUNT, "RDMA exchanges running now.");
  public static final Metric LEASED_BATCHES =
      gauge("leasedBatches", COUNT, "Batches leased now (not yet freed and released).");
  public static final Metric LEASED_BYTES = gauge("leasedBytes", BYTES, "Body bytes leased now.");
  public static final Metric REGISTERED_BLOCKS =
      gauge("registeredBlocks", COUNT, "Blocks of the producer's arenas taken now.");
  public static final Metric REGISTERED_BLOCK_BYTES =
      gauge("registeredBlockBytes", BYTES, "Bytes of the arena blocks taken now.");
  public static final Metric LEASE_REGION_BYTES =
      gauge(
          "leaseRegionBytes",
          BYTES,
          "Bytes registered for live leases (limit `maxRegisteredBytes`).");
  public static final Metric LEASE_GUARDS =
      gauge(
          "leaseGuards",
          COUNT,
          "Lease guard words registered now: one per lease, until the transport released its "
              + "guard's region after the lease ended.");

  // Client.

  public static final Metric STREAMS_ONE_SIDED =
      counter(
          "streamsOneSided",
          COUNT,
          "Streams opened on the RDMA data plane (one that fell back before its first batch "
              + "counts here and in `streamsGrpc`).");
  public static final Metric STREAMS_GRPC =
      counter("streamsGrpc", COUNT, "Streams read through gRPC DoGet.");
  public static final Metric BATCHES_ONE_SIDED =
      counter("batchesOneSided", COUNT, "Batches pulled one-sided and handed out.");
  public static final Metric BODY_BYTES_ONE_SIDED =
      counter("bodyBytesOneSided", BYTES, "Body bytes of the batches pulled one-sided.");
  public static final Metric BODIES_VERIFIED =
      counter(
          "bodiesVerified",
          COUNT,
          "Pulled bodies whose CRC32C matched the server's (`bodyChecksum` on).");
  public static final Metric BODIES_MISMATCHED =
      counter(
          "bodiesMismatched",
          COUNT,
          "Pulled bodies whose CRC32C did not match: each failed its stream.");
  public static final Metric STALE_BATCHES_REJECTED =
      counter(
          "staleBatchesRejected",
          COUNT,
          "Batches dropped because the server ended their lease while they were read.");
  public static final Metric FALLBACKS_BY_REASON =
      counter(
          "fallbacks.<reason>",
          COUNT,
          "Streams that took DoGet for that `FallbackReason` (lower case: `transport`, ...).");
  public static final Metric FALLBACKS =
      counter("fallbacks", COUNT, "Streams that took DoGet for any reason.");

  /** The keys of {@link RdmaFlightProducer#stats()}, in its order. */
  public static final List<Metric> SERVER =
      List.of(
          SESSIONS_STARTED,
          SESSIONS_REFUSED,
          SESSIONS_CANCELLED,
          BATCHES_COPIED,
          BATCHES_IN_PLACE,
          BODY_BYTES,
          LEASES_FREED,
          FREE_MESSAGES,
          LEASES_RELEASED_UNFREED,
          LEASES_EXPIRED,
          CREDIT_WAITS,
          LEASES_FAILED,
          PEAK_LEASED_BYTES,
          ACTIVE_SESSIONS,
          LEASED_BATCHES,
          LEASED_BYTES,
          REGISTERED_BLOCKS,
          REGISTERED_BLOCK_BYTES,
          LEASE_REGION_BYTES,
          LEASE_GUARDS);

  /** The keys of {@link RdmaFlightClient#stats()}, in its order. */
  public static final List<Metric> CLIENT =
      List.of(
          STREAMS_ONE_SIDED,
          STREAMS_GRPC,
          BATCHES_ONE_SIDED,
          BODY_BYTES_ONE_SIDED,
          BODIES_VERIFIED,
          BODIES_MISMATCHED,
          STALE_BATCHES_REJECTED,
          FALLBACKS_BY_REASON,
          FALLBACKS);

  /** The name of {@code reason}'s member of {@link #FALLBACKS_BY_REASON}. */
  public static String fallbackKey(FallbackReason reason) {
    return FALLBACKS_BY_REASON.of(reason.name().toLowerCase(Locale.ROOT)).name();
  }

  /** Every key {@link RdmaFlightProducer#stats()} has. */
  public static List<String> serverKeys() {
    return SERVER.stream().map(Metric::name).toList();
  }

  /** Every key {@link RdmaFlightClient#stats()} has (the fallback family once per reason). */
  public static List<String> clientKeys() {
    List<String> keys = new ArrayList<>();
    for (Metric m : CLIENT) {
      if (m == FALLBACKS_BY_REASON) {
        for (FallbackReason r : FallbackReason.values()) {
          keys.add(fallbackKey(r));
        }
      } else {
        keys.add(m.name());
      }
    }
    return keys;
  }

  /** The server's table of docs/FLIGHT.md. */
  public static String serverTable() {
    return Metrics.markdownTable(SERVER);
  }

  /** The client's table of docs/FLIGHT.md. */
  public static String clientTable() {
    return Metrics.markdownTable(CLIENT);
  }

  /** Prints both tables, to paste them into docs/FLIGHT.md after a change. */
  public static void main(String[] args) {
    System.out.println("Server (`RdmaFlightProducer.stats()`):\n");
    System.out.print(serverTable());
    System.out.println("\nClient (`RdmaFlightClient.stats()`):\n");
    System.out.print(clientTable());
  }
}
