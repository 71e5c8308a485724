package io.memwire.transfer.metrics;

import static io.memwire.transfer.metrics.Metric.Unit.BYTES;
import static io.memwire.transfer.metrics.Metric.Unit.COUNT;
import static io.memwire.transfer.metrics.Metric.counter;
import static io.memwire.transfer.metrics.Metric.gauge;

import java.util.List;
import java.util.stream.Stream;

/**
 * The transport's metrics, each declared once: the keys of {@link
 * io.memwire.transfer.TransferStats} as {@link io.memwire.transfer.TransferNode#stats()} fills them
 * ({@link #NODE} for every node, then the provider's own: {@link #TCP} or {@link #VERBS}).
 * Consumers export them under their own names by referring to these constants, and docs/METRICS.md
 * shows the table {@link #main} prints.
 */
public final class TransportMetrics {
  private TransportMetrics() {}

  // Reads this node made.

  public static final Metric READS_COMPLETED =
      counter("readsCompleted", COUNT, "Reads completed successfully.");
  public static final Metric BYTES_READ =
      counter("bytesRead", BYTES, "Bytes delivered by successful reads.");
  public static final Metric REMOTE_ACCESS_ERRORS =
      counter(
          "remoteAccessErrors",
          COUNT,
          "Reads failed because the peer refused the access (unknown key, out of bounds).");
  public static final Metric CONNECTION_ERRORS =
      counter("connectionErrors", COUNT, "Reads failed because their connection failed.");
  public static final Metric TIMEOUTS =
      counter("timeouts", COUNT, "Reads failed because they outlived readTimeout.");
  public static final Metric CONNECT_FAILURES =
      counter("connectFailures", COUNT, "Connections that could not be opened.");
  public static final Metric PEER_BACKOFF_REJECTS =
      counter(
          "peerBackoffRejects",
          COUNT,
          "Connection attempts failed at once because the peer is backed off (peerBackoff).");
  public static final Metric CONNECTIONS_REAPED =
      counter(
          "connectionsReaped",
          COUNT,
          "Outgoing connections closed because they stayed idle past connectionIdleTimeout.");
  public static final Metric OUTSTANDING_REQUESTS =
      gauge("outstandingRequests", COUNT, "Reads posted and not yet ended.");

  // What the node holds.

  public static final Metric REGISTERED_REGIONS =
      gauge("registeredRegions", COUNT, "Regions registered for peers to read.");
  public static final Metric REGISTERED_BYTES =
      gauge(
          "registeredBytes",
          BYTES,
          "Bytes registered for regions and pool memory, counted against registrationBudget.");
  public static final Metric MAPPED_SEGMENTS =
      gauge("mappedSegments", COUNT, "File mappings not yet unmapped.");
  public static final Metric MAPPED_BYTES =
      gauge("mappedBytes", BYTES, "Bytes of file mappings not yet unmapped.");
  public static final Metric POOL_BUFFERS_OUTSTANDING =
      gauge("poolBuffersOutstanding", COUNT, "Read-pool buffers lent to callers now.");
  public static final Metric POOL_BYTES_OUTSTANDING =
      gauge("poolBytesOutstanding", BYTES, "Bytes of read-pool buffers lent to callers now.");
  public static final Metric POOL_SLAB_BYTES =
      gauge("poolSlabBytes", BYTES, "Registered slab bytes of the read pool.");
  public static final Metric MEMORY_BYTES =
      gauge(
          "memoryBytes",
          BYTES,
          "Bytes of registered-memory units live now, over every allocator of the node.");
  public static final Metric MEMORY_PEAK_BYTES =
      gauge(
          "memoryPeakBytes",
          BYTES,
          "Most registered-memory unit bytes live at once since the node started.");
  public static final Metric MEMORY_UNITS =
      gauge("memoryUnits", COUNT, "Registered-memory units live now.");
  public static final Metric MEMORY_CHILD_BYTES =
      gauge(
          "memory.<allocator>.bytes",
          BYTES,
          "Bytes of live units of the node's child allocator of that name (summed over "
              + "children of one name).");
  public static final Metric MEMORY_CHILD_PEAK_BYTES =
      gauge(
          "memory.<allocator>.peakBytes",
          BYTES,
          "Peak unit bytes of the child allocator of that name (the largest of children of one "
              + "name).");
  public static final Metric MEMORY_CHILD_UNITS =
      gauge("memory.<allocator>.units", COUNT, "Live units of the child allocator of that name.");
  public static final Metric OPEN_CONNECTIONS =
      gauge("openConnections", COUNT, "Outgoing connections cached and open now.");
  public static final Metric TRACKED_PEERS =
      gauge(
          "trackedPeers",
          COUNT,
          "Peers the node keeps outgoing-connection state for now: a cached connection, a connect "
              + "attempt, or a back-off (until as long again has passed since it ran out).");

  // tcp provider: serving peers.

  public static final Metric SERVED_READS =
      counter(
          "servedReads",
          COUNT,
          "tcp: reads this node served to peers (verbs reads bypass the CPU and are not counted).");
  public static final Metric SERVED_BYTES =
      counter("servedBytes", BYTES, "tcp: bytes this node served to peers.");
  public static final Metric SENDFILE_READS =
      counter(
          "sendfileReads",
          COUNT,
          "tcp: of servedReads, those sent from their file by sendfile "
              + "(memwire.tcp.sendfileMinBytes), not written from its mapping.");
  public static final Metric SERVED_ERRORS =
      counter(
          "servedErrors",
          COUNT,
          "tcp: requests this node refused (unknown region key, out of bounds).");
  public static final Metric PROTOCOL_VIOLATIONS =
      counter(
          "protocolViolations",
          COUNT,
          "tcp: served connections closed for a malformed or unexpected frame.");
  public static final Metric AUTH_FAILURES =
      counter("authFailures", COUNT, "tcp: handshakes that failed authentication.");
  public static final Metric ACCEPT_FAILURES =
      counter(
          "acceptFailures",
          COUNT,
          "tcp: failed accept() calls (accepting pauses with a back-off, the listener stays).");
  public static final Metric CONNECTIONS_REFUSED =
      counter(
          "connectionsRefused",
          COUNT,
          "tcp: connections refused over maxConnections or the handshake cap.");
  public static final Metric HANDSHAKES_EVICTED =
      counter(
          "handshakesEvicted",
          COUNT,
          "tcp: connections closed in their handshake to make room for a new one at the handshake "
              + "cap (the oldest of the source address holding the most handshakes goes).");
  public static final Metric IDLE_CLOSED =
      counter("idleClosed", COUNT, "tcp: served connections closed idle past idleTimeout.");
  public static final Metric WRITE_TIMEOUTS =
      counter(
          "writeTimeouts",
          COUNT,
          "tcp: served connections closed because the peer took no response bytes for "
              + "writeTimeout.");
  public static final Metric LOOP_ERRORS =
      counter(
          "loopErrors",
          COUNT,
          "tcp: errors an I/O thread survived (the channel involved is closed, the loop goes on).");
  public static final Metric SERVING_SESSIONS =
      gauge("servingSessions", COUNT, "tcp: connections served now (in or past the handshake).");
  public static final Metric LIVE_REMOTE_KEYS =
      gauge("liveRemoteKeys", COUNT, "tcp: region keys peers may read now.");

  // verbs provider.

  public static final Metric VERBS_CONNECTIONS =
      gauge("verbsConnections", COUNT, "verbs: outgoing connections open now.");
  public static final Metric VERBS_QUEUE_PAIRS =
      gauge("verbsQueuePairs", COUNT, "verbs: outgoing queue pairs open now.");
  public static final Metric VERBS_ACCEPTED_PEERS =
      gauge("verbsAcceptedPeers", COUNT, "verbs: queue pairs of peers connected to this node now.");
  public static final Metric VERBS_ACCEPTED_TOTAL =
      counter("verbsAcceptedTotal", COUNT, "verbs: peer queue pairs accepted since start.");
  public static final Metric VERBS_REGISTRATIONS =
      gauge("verbsRegistrations", COUNT, "verbs: memory registrations live now.");
  public static final Metric VERBS_REGISTERED_BYTES =
      gauge("verbsRegisteredBytes", BYTES, "verbs: bytes of the memory registrations live now.");
  public static final Metric VERBS_FILE_REGIONS_READ_ONLY_MAPPING =
      counter(
          "verbsFileRegionsReadOnlyMapping",
          COUNT,
          "verbs: file regions registered as their read-only mapping.");
  public static final Metric VERBS_FILE_REGIONS_SHARED_MAPPING =
      counter(
          "verbsFileRegionsSharedMapping",
          COUNT,
          "verbs: file regions registered through a read-write shared mapping.");
  public static final Metric VERBS_FILE_REGIONS_PRIVATE_COPY =
      counter(
          "verbsFileRegionsPrivateCopy",
          COUNT,
          "verbs: file regions registered as a private copy.");
  public static final Metric VERBS_FILE_COPY_BYTES =
      counter("verbsFileCopyBytes", BYTES, "verbs: bytes copied for private-copy file regions.");
  public static final Metric VERBS_AUTH_ACCEPTED =
      counter(
          "verbsAuthAccepted", COUNT, "verbs, with a secret (else absent): peer proofs accepted.");
  public static final Metric VERBS_AUTH_REJECTED =
      counter("verbsAuthRejected", COUNT, "verbs, with a secret: peer proofs rejected.");
  public static final Metric VERBS_AUTH_REFUSED_REQUESTS =
      counter(
          "verbsAuthRefusedRequests",
          COUNT,
          "verbs, with a secret: connect requests refused without an authenticated handshake.");
  public static final Metric VERBS_REMOTE_ACCESS_ERRORS =
      counter(
          "verbsRemoteAccessErrors", COUNT, "verbs: reads completed with a remote access error.");
  public static final Metric VERBS_RECONNECTS =
      counter(
          "verbsReconnects", COUNT, "verbs: queue pairs re-opened after a remote access error.");
  public static final Metric VERBS_POST_CALLS =
      counter("verbsPostCalls", COUNT, "verbs: ibv_post_send calls.");
  public static final Metric VERBS_POSTED_READS =
      counter("verbsPostedReads", COUNT, "verbs: reads posted by those calls.");
  public static final Metric VERBS_COMPLETIONS =
      counter("verbsCompletions", COUNT, "verbs: completions polled, over every completion queue.");
  public static final Metric VERBS_CQ_POLLS_WITH_WORK =
      counter("verbsCqPollsWithWork", COUNT, "verbs: completion-queue polls that found work.");
  public static final Metric VERBS_CQ_SLEEPS =
      counter(
          "verbsCqSleeps",
          COUNT,
          "verbs: times a completion thread stopped spinning and waited for an event.");
  public static final Metric VERBS_CQ_EVENTS =
      counter("verbsCqEvents", COUNT, "verbs: completion events received.");
  public static final Metric VERBS_COMPLETION_QUEUES =
      gauge("verbsCompletionQueues", COUNT, "verbs: completion queues open now.");
  public static final Metric VERBS_COMPLETION_QUEUES_PEAK =
      gauge("verbsCompletionQueuesPeak", COUNT, "verbs: most completion queues open at once.");
  public static final Metric VERBS_COMPLETION_QUEUES_OPENED =
      counter("verbsCompletionQueuesOpened", COUNT, "verbs: completion queues opened since start.");
  public static final Metric VERBS_QUEUE_PAIRS_PER_COMPLETION_QUEUE =
      gauge(
          "verbsQueuePairsPerCompletionQueue",
          COUNT,
          "verbs: queue pairs one completion queue holds, as the provider sized it.");
  public static final Metric VERBS_CONNECTION_LIMIT =
      gauge(
          "verbsConnectionLimit",
          COUNT,
          "verbs: most outgoing connections at once (completion queues times queue pairs each).");
  public static final Metric VERBS_CONNECTIONS_REFUSED =
      counter(
          "verbsConnectionsRefused", COUNT, "verbs: connections refused at verbsConnectionLimit.");

  /** Every node's metrics, in the order of {@link io.memwire.transfer.TransferStats#asMap()}. */
  public static final List<Metric> NODE =
      List.of(
          READS_COMPLETED,
          BYTES_READ,
          REMOTE_ACCESS_ERRORS,
          CONNECTION_ERRORS,
          TIMEOUTS,
          CONNECT_FAILURES,
          PEER_BACKOFF_REJECTS,
          CONNECTIONS_REAPED,
          OUTSTANDING_REQUESTS,
          REGISTERED_REGIONS,
          REGISTERED_BYTES,
          MAPPED_SEGMENTS,
          MAPPED_BYTES,
          POOL_BUFFERS_OUTSTANDING,
          POOL_BYTES_OUTSTANDING,
          POOL_SLAB_BYTES,
          MEMORY_BYTES,
          MEMORY_PEAK_BYTES,
          MEMORY_UNITS,
          MEMORY_CHILD_BYTES,
          MEMORY_CHILD_PEAK_BYTES,
          MEMORY_CHILD_UNITS,
          OPEN_CONNECTIONS,
          TRACKED_PEERS);

  /** The tcp provider's own metrics. */
  public static final List<Metric> TCP =
      List.of(
          SERVED_READS,
          SERVED_BYTES,
          SENDFILE_READS,
          SERVED_ERRORS,
          PROTOCOL_VIOLATIONS,
          AUTH_FAILURES,
          ACCEPT_FAILURES,
          CONNECTIONS_REFUSED,
          HANDSHAKES_EVICTED,
          IDLE_CLOSED,
          WRITE_TIMEOUTS,
          LOOP_ERRORS,
          SERVING_SESSIONS,
          LIVE_REMOTE_KEYS);

  /** The verbs provider's own metrics (the three {@code verbsAuth*} only with a secret). */
  public static final List<Metric> VERBS =
      List.of(
          VERBS_CONNECTIONS,
          VERBS_QUEUE_PAIRS,
          VERBS_ACCEPTED_PEERS,
          VERBS_ACCEPTED_TOTAL,
          VERBS_REGISTRATIONS,
          VERBS_REGISTERED_BYTES,
          VERBS_FILE_REGIONS_READ_ONLY_MAPPING,
          VERBS_FILE_REGIONS_SHARED_MAPPING,
          VERBS_FILE_REGIONS_PRIVATE_COPY,
          VERBS_FILE_COPY_BYTES,
          VERBS_AUTH_ACCEPTED,
          VERBS_AUTH_REJECTED,
          VERBS_AUTH_REFUSED_REQUESTS,
          VERBS_REMOTE_ACCESS_ERRORS,
          VERBS_RECONNECTS,
          VERBS_POST_CALLS,
          VERBS_POSTED_READS,
          VERBS_COMPLETIONS,
          VERBS_CQ_POLLS_WITH_WORK,
          VERBS_CQ_SLEEPS,
          VERBS_CQ_EVENTS,
          VERBS_COMPLETION_QUEUES,
          VERBS_COMPLETION_QUEUES_PEAK,
          VERBS_COMPLETION_QUEUES_OPENED,
          VERBS_QUEUE_PAIRS_PER_COMPLETION_QUEUE,
          VERBS_CONNECTION_LIMIT,
          VERBS_CONNECTIONS_REFUSED);

  /** Every transport metric, in documentation order. */
  public static final List<Metric> ALL = Stream.of(NODE, TCP, VERBS).flatMap(List::stream).toList();

  /** The declared metric {@code key} is, or is a member of; null when none. */
  public static Metric find(String key) {
    for (Metric m : ALL) {
      if (m.matches(key)) {
        return m;
      }
    }
    return null;
  }

  /** The table of docs/METRICS.md's "Transport counters". */
  public static String table() {
    return Metrics.markdownTable(ALL);
  }

  /** Prints the table of docs/METRICS.md, to paste it there after a change. */
  public static void main(String[] args) {
    System.out.print(table());
  }
}
