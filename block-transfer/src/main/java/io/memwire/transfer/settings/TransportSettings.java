package io.memwire.transfer.settings;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfigException;
import java.time.Duration;
import java.util.List;

/**
 * The transport's settings, each declared once: here, or, for the RDMA fabric (device, QoS classes,
 * UCX), in {@link FabricSettings}; {@link #ALL} lists every key. {@link
 * io.memwire.transfer.TransferConfig} reads and checks them, docs/CONFIGURATION.md shows the tables
 * {@link #main} prints, and consumers (shuffle manager, Flight) read them with their own prefix.
 * {@link #SYSTEM_PROPERTIES} are JVM system properties read by one provider each.
 */
public final class TransportSettings {
  private TransportSettings() {}

  static final String V010 = "0.1.0";
  private static final long KIB = 1024;
  private static final long MIB = 1024 * KIB;
  private static final long GIB = 1024 * MIB;

  public static final Setting<ProviderKind> PROVIDER =
      Setting.key("provider")
          .since(V010)
          .doc(
              "Transport for one-sided reads. auto uses verbs when its probe passes, else ucx "
                  + "when the ucx module is on the class path and UCX offers an RDMA transport "
                  + "here, else tcp (logged); ucx over UCX's tcp or shared memory only when asked "
                  + "by name.")
          .text("auto, verbs, ucx, tcp", ProviderKind::parse)
          .withDefault("auto");

  public static final Setting<String> BIND_ADDRESS =
      Setting.key("bindAddress")
          .since(V010)
          .doc(
              "Address the node listens on and publishes in region descriptors. With verbs it must "
                  + "be an address of an RDMA device.")
          .text(
              "an IP address or hostname of this node, not a wildcard",
              (key, s) -> {
                if (s.isEmpty()) {
                  throw new TransferConfigException(key + " must not be empty");
                }
                return s;
              })
          .withDefault("127.0.0.1");

  public static final Setting<Integer> PORT =
      Setting.key("port")
          .since(V010)
          .doc("Listening port.")
          .count(0, 65535, "0 = ephemeral")
          .withDefault("0");

  public static final Setting<Duration> CONNECT_TIMEOUT =
      Setting.key("connectTimeout")
          .since(V010)
          .doc("Deadline for opening a connection (route, connect, handshake).")
          .duration(100, 600_000)
          .withDefault("10s");

  public static final Setting<Duration> READ_TIMEOUT =
      Setting.key("readTimeout")
          .since(V010)
          .doc(
              "Deadline for one read; when it passes the connection is failed and reads on it fail.")
          .duration(100, 3_600_000)
          .withDefault("60s");

  public static final Setting<Duration> PEER_BACKOFF =
      Setting.key("peerBackoff")
          .since(V010)
          .doc(
              "After a connection to a peer could not be opened (refused, unreachable, timed out, "
                  + "handshake rejected), further attempts fail at once for this long, naming the "
                  + "failure, instead of each waiting up to connectTimeout. Doubled with each "
                  + "further failure in a row, up to 5 min (or this value if larger); a connection "
                  + "that opens resets it.")
          .duration(0, 600_000, "0 = off")
          .withDefault("5s");

  public static final Setting<Duration> CONNECTION_IDLE_TIMEOUT =
      Setting.key("connectionIdleTimeout")
          .since(V010)
          .doc(
              "An outgoing connection (tcp socket or verbs queue pair) that had no read queued or "
                  + "in flight and was not handed out by connection(peer) for this long is closed and "
                  + "counted as connectionsReaped; the next connection(peer) opens a new one, and a "
                  + "read on the closed one fails at once with ConnectionReapedException (retry it "
                  + "on connection(peer)). Keeps a reader of many peers connected only to the ones it "
                  + "reads. Keep it above readTimeout (a caller may wait that long between taking a "
                  + "connection and reading on it) and below the serving peers' idleTimeout.")
          .duration(0, 86_400_000, "0 = never")
          .withDefault("5min");

  public static final Setting<Integer> MAX_OUTSTANDING_REQUESTS =
      Setting.key("maxOutstandingRequests")
          .since(V010)
          .doc(
              "Reads in flight per connection (verbs: also capped by the device's "
                  + "max_qp_rd_atom).")
          .count(1, 4096)
          .withDefault("64");

  public static final Setting<Long> MAX_OUTSTANDING_BYTES =
      Setting.key("maxOutstandingBytes")
          .since(V010)
          .doc("Bytes in flight per connection.")
          .bytes(64 * KIB, GIB)
          .withDefault("64m");

  public static final Setting<Long> MAX_TRANSFER_SIZE =
      Setting.key("maxTransferSize")
          .since(V010)
          .doc("Largest single wire read; larger reads are split into pieces of this size.")
          .bytes(4 * KIB, 64 * MIB)
          .withDefault("1m");

  public static final Setting<Long> MAX_SEGMENT_SIZE =
      Setting.key("maxSegmentSize")
          .since(V010)
          .doc("Largest registered segment; larger files are registered as several segments.")
          .bytes(4 * KIB, Integer.MAX_VALUE)
          .withDefault("1g");

  public static final Setting<Long> REGISTRATION_BUDGET =
      Setting.key("registrationBudget")
          .since(V010)
          .doc(
              "Most bytes this node keeps registered (regions plus the read-buffer pool). Beyond it "
                  + "register() fails with RegistrationException. With verbs keep it under ulimit -l.")
          .bytes(MIB, 1L << 50)
          .withDefault("16g");

  public static final Setting<Long> POOL_MAX_BYTES =
      Setting.key("poolMaxBytes")
          .since(V010)
          .doc("Most bytes the read-buffer pool keeps registered for reuse.")
          .bytes(MIB, 64 * GIB)
          .withDefault("256m");

  public static final Setting<Integer> IO_THREADS =
      Setting.key("ioThreads")
          .since(V010)
          .doc(
              "tcp: I/O threads per side of the node: that many serve its accepted connections,"
                  + " that many carry its outgoing (reading) connections.")
          .count(1, 64)
          .withDefault("2");

  public static final Setting<String> AUTH_SECRET =
      Setting.key("authSecret")
          .since(V010)
          .doc(
              "Shared secret; peers prove knowledge of it with an HMAC-SHA256 challenge (tcp: in the "
                  + "connection handshake; verbs: over TCP on the node's port before each queue pair).")
          .text(
              "any non-empty string",
              (key, s) -> {
                if (s.isEmpty()) {
                  throw new TransferConfigException(key + " must not be empty when set");
                }
                return s;
              })
          .optional("(none)");

  public static final Setting<Integer> MAX_CONNECTIONS =
      Setting.key("maxConnections")
          .since(V010)
          .doc(
              "tcp: most connections this node serves at once (past their handshake: "
                  + "authenticated, with authSecret); further ones are refused at once (the peer is "
                  + "told the node is at its connection limit). Connections still in their "
                  + "handshake have a separate, smaller cap (maxConnections / 16, at least 16), so "
                  + "peers that never authenticate cannot take authenticated peers' slots; one more "
                  + "closes the oldest handshake of the source address holding the most, so peers "
                  + "at one address cannot keep peers at other addresses out either.")
          .count(1, 1 << 20)
          .withDefault("4096");

  public static final Setting<Duration> IDLE_TIMEOUT =
      Setting.key("idleTimeout")
          .since(V010)
          .doc(
              "tcp: a served connection with no request and nothing to send for this long is "
                  + "closed; a reader reconnects on its next read.")
          .duration(1_000, 86_400_000)
          .withDefault("10min");

  public static final Setting<Duration> WRITE_TIMEOUT =
      Setting.key("writeTimeout")
          .since(V010)
          .doc(
              "tcp: a served connection whose peer takes none of its pending response bytes for "
                  + "this long is closed, releasing the regions those responses pinned.")
          .duration(100, 3_600_000)
          .withDefault("60s");

  /** Every transport key, in documentation order. */
  public static final List<Setting<?>> ALL =
      List.of(
          PROVIDER,
          BIND_ADDRESS,
          FabricSettings.DEVICE,
          FabricSettings.GID_INDEX,
          FabricSettings.TRAFFIC_CLASS,
          FabricSettings.SERVICE_LEVEL,
          FabricSettings.UCX_TRANSPORTS,
          FabricSettings.UCX_CONFIG,
          PORT,
          CONNECT_TIMEOUT,
          READ_TIMEOUT,
          PEER_BACKOFF,
          CONNECTION_IDLE_TIMEOUT,
          MAX_OUTSTANDING_REQUESTS,
          MAX_OUTSTANDING_BYTES,
          MAX_TRANSFER_SIZE,
          MAX_SEGMENT_SIZE,
          REGISTRATION_BUDGET,
          POOL_MAX_BYTES,
          IO_THREADS,
          AUTH_SECRET,
          FabricSettings.MTU_HANDSHAKE,
          MAX_CONNECTIONS,
          IDLE_TIMEOUT,
          WRITE_TIMEOUT);

  /** JVM system property of the tcp provider; 2g-1: sendfile off. */
  public static final Setting<Long> TCP_SENDFILE_MIN_BYTES =
      Setting.key("memwire.tcp.sendfileMinBytes")
          .since(V010)
          .doc(
              "tcp: serve reads of file regions of at least this many bytes with "
                  + "`FileChannel.transferTo` (sendfile) instead of gathering writes from the "
                  + "mapping, whose first touch of each page is a page fault; 2g-1: never. In the "
                  + "shuffle benchmark it took the serving threads' CPU per GiB from 1.25 to "
                  + "1.03-1.14 of Netty's with 1 MiB blocks.")
          .bytes(0, Integer.MAX_VALUE)
          .withDefault("256k");

  /** JVM system property of the verbs provider, in microseconds. */
  public static final Setting<Long> VERBS_CQ_SPIN_MICROS =
      Setting.key("memwire.verbs.cqSpinMicros")
          .since(V010)
          .doc(
              "verbs: how long, in microseconds, the completion thread keeps polling an empty "
                  + "completion queue before it arms notification and sleeps; 0 sleeps at once (less "
                  + "CPU, more wake-ups per read).")
          .longCount(0, 1_000_000)
          .withDefault("50");

  /** JVM system property of the verbs provider; unset: sized from the device. */
  public static final Setting<Integer> VERBS_CQ_ENTRIES =
      Setting.key("memwire.verbs.cqEntries")
          .since(V010)
          .doc(
              "verbs: entries of each completion queue, capped by the device's max_cqe. A "
                  + "connection's queue pair takes as many as it may have reads in flight "
                  + "(maxOutstandingRequests, capped by max_qp_rd_atom); when a queue is full of "
                  + "queue pairs the next connection gets a new queue with its own completion thread.")
          .count(1, 1 << 22)
          .optional("max_cqe, at most 65536");

  /** JVM system property of the verbs provider: the hard limit on completion queues. */
  public static final Setting<Integer> VERBS_MAX_COMPLETION_QUEUES =
      Setting.key("memwire.verbs.maxCompletionQueues")
          .since(V010)
          .doc(
              "verbs: most completion queues (each with its completion thread) a node creates, "
                  + "also capped by the device's max_cq. Together with the queue pairs each holds it "
                  + "bounds the node's outgoing connections; a connection beyond that fails at once "
                  + "with a TransferConnectionException naming this limit, logged and counted as "
                  + "verbsConnectionsRefused.")
          .count(1, 1024)
          .withDefault("64");

  /** JVM system property of the registered-memory allocators; read when a node starts. */
  public static final Setting<Boolean> MEMORY_ALLOCATION_STACKS =
      Setting.key("memwire.memory.allocationStacks")
          .since(V010)
          .doc(
              "Record where every unit of registered memory (read buffer, directory chunk, "
                  + "Flight block or guard) was allocated, and show those stacks in the leak report "
                  + "logged when an allocator closes with units still live. Costs a stack trace per "
                  + "allocation: for finding leaks, not for production.")
          .bool()
          .withDefault("false");

  /** The JVM system properties, in documentation order. */
  public static final List<Setting<?>> SYSTEM_PROPERTIES =
      List.of(
          TCP_SENDFILE_MIN_BYTES,
          VERBS_CQ_SPIN_MICROS,
          VERBS_CQ_ENTRIES,
          VERBS_MAX_COMPLETION_QUEUES,
          MEMORY_ALLOCATION_STACKS);

  /** The key table of docs/CONFIGURATION.md (names without prefix). */
  public static String keyTable() {
    return table("| key | default | range | meaning |", ALL);
  }

  /** The "Advanced JVM system properties" table of docs/CONFIGURATION.md. */
  public static String systemPropertyTable() {
    return table("| property | default | range | meaning |", SYSTEM_PROPERTIES);
  }

  private static String table(String header, List<Setting<?>> settings) {
    return Settings.markdownTable(
        header,
        "| --- | --- | --- | --- |",
        settings.stream().map(s -> Settings.Row.of("", s)).toList());
  }

  /** Prints both tables of docs/CONFIGURATION.md, to paste them there after a change. */
  public static void main(String[] args) {
    System.out.println(keyTable());
    System.out.print(systemPropertyTable());
  }
}
