package io.memwire.flight;

import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.Setting;
import io.memwire.transfer.settings.Settings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.apache.arrow.vector.compression.CompressionUtil;

/**
 * The Flight module's settings, each declared once: the client's under {@value #CLIENT_PREFIX}
 * (also read as JVM system properties) and the server's under {@value #SERVER_PREFIX}. The builders
 * read and check them from here, and docs/FLIGHT.md shows the table {@link #main} prints.
 * Transfer-node keys under {@value RdmaFlightClient#TRANSFER_PREFIX} are the transport's
 * (docs/CONFIGURATION.md).
 */
public final class FlightSettings {
  private FlightSettings() {}

  /** Prefix of the client's keys. */
  public static final String CLIENT_PREFIX = "memwire.flight.";

  /** Prefix of the server's keys. */
  public static final String SERVER_PREFIX = "memwire.flight.server.";

  private static final String V010 = "0.1.0";
  private static final long TIB = 1L << 40;

  /** Client: which path batch bodies take. */
  public static final Setting<DataPlane> DATA_PLANE =
      Setting.key("dataPlane")
          .since(V010)
          .doc(
              "Client data plane: auto takes the endpoint's rdma://, rdma+tcp:// or rdma+ucx:// "
                  + "location when the transport connects, else plain DoGet; verbs, tcp and ucx "
                  + "insist; grpc is DoGet.")
          .text("auto, verbs, tcp, ucx, grpc", DataPlane::parse)
          .withDefault("auto");

  /** Client: most batches leased to one stream at once. */
  public static final Setting<Integer> WINDOW_BATCHES =
      Setting.key("windowBatches")
          .since(V010)
          .doc("Client credit window: most batches the server keeps leased for one stream.")
          .count(1, Integer.MAX_VALUE)
          .withDefault("32");

  /** Client: most body bytes leased to one stream at once. */
  public static final Setting<Long> WINDOW_BYTES =
      Setting.key("windowBytes")
          .since(V010)
          .doc("Client credit window: most body bytes the server keeps leased for one stream.")
          .bytes(1, TIB)
          .withDefault("128m");

  /** Server: body compression on the data plane. */
  public static final Setting<CompressionUtil.CodecType> COMPRESSION =
      Setting.key("compression")
          .since(V010)
          .doc("Body compression on the data plane.")
          .text("none, lz4_frame (or lz4), zstd", FlightSettings::parseCodec)
          .withDefault("none");

  /** Server: how long a batch stays leased without the client's FREE. */
  public static final Setting<Duration> LEASE_TIMEOUT =
      Setting.key("leaseTimeout")
          .since(V010)
          .doc("How long a batch stays leased without the client's FREE before the exchange fails.")
          .duration(10, 86_400_000)
          .withDefault("60s");

  /** Server: cap on a client's window in batches. */
  public static final Setting<Integer> MAX_WINDOW_BATCHES =
      Setting.key("maxWindowBatches")
          .since(V010)
          .doc("Cap on a client's credit window in batches (the smaller of the two applies).")
          .count(1, Integer.MAX_VALUE)
          .withDefault("64");

  /** Server: cap on a client's window in bytes. */
  public static final Setting<Long> MAX_WINDOW_BYTES =
      Setting.key("maxWindowBytes")
          .since(V010)
          .doc("Cap on a client's credit window in body bytes (the smaller of the two applies).")
          .bytes(1, TIB)
          .withDefault("256m");

  /** Server: registered arena size. */
  public static final Setting<Long> ARENA_SIZE =
      Setting.key("arenaSize")
          .since(V010)
          .doc(
              "Size of one registered arena for leased bodies (rounded up to a multiple of 1 MiB).")
          .bytes(1, TIB)
          .withDefault("64m");

  /** Server: most bytes all arenas take. */
  public static final Setting<Long> MAX_REGISTERED_BYTES =
      Setting.key("maxRegisteredBytes")
          .since(V010)
          .doc(
              "Most bytes all arenas for leased bodies take together (at least one arena), and"
                  + " apart the most bytes registered for live leases; a lease past it fails.")
          .bytes(1, TIB)
          .withDefault("1g");

  /** Server: most RDMA exchanges at once. */
  public static final Setting<Integer> MAX_EXCHANGES =
      Setting.key("maxExchanges")
          .since(V010)
          .doc(
              "Most RDMA exchanges served at once; each holds a gRPC handler thread and a pump "
                  + "thread. Past it DoExchange is refused with RESOURCE_EXHAUSTED (auto clients take "
                  + "DoGet).")
          .count(1, 10_000)
          .withDefault("64");

  /** Server: whether every peer of the fabric is trusted. */
  public static final Setting<Boolean> TRUSTED_FABRIC =
      Setting.key("trustedFabric")
          .since(V010)
          .doc(
              "Whether every peer of the fabric is trusted. With provider verbs or ucx the data "
                  + "plane serves only when true (a peer could read another client's lease by "
                  + "guessing its rkey; UCX's software GET checks no key).")
          .bool()
          .withDefault("false");

  /** Server: whether each leased body's CRC32C travels with its descriptor. */
  public static final Setting<Boolean> BODY_CHECKSUM =
      Setting.key("bodyChecksum")
          .since("0.6.0")
          .doc(
              "Whether the server sends each leased body's CRC32C with its descriptor; the client "
                  + "checks it after the one-sided pull and fails the stream on a mismatch, "
                  + "naming the batch. Off by default: on this project's 2-core loopback benchmark "
                  + "it cost 17-33% more CPU per 1 MiB batch (docs/BENCHMARKS.md).")
          .bool()
          .withDefault("false");

  /** The client's settings (under {@value #CLIENT_PREFIX}), in documentation order. */
  public static final List<Setting<?>> CLIENT = List.of(DATA_PLANE, WINDOW_BATCHES, WINDOW_BYTES);

  /** The server's settings (under {@value #SERVER_PREFIX}), in documentation order. */
  public static final List<Setting<?>> SERVER =
      List.of(
          COMPRESSION,
          LEASE_TIMEOUT,
          MAX_WINDOW_BATCHES,
          MAX_WINDOW_BYTES,
          ARENA_SIZE,
          MAX_REGISTERED_BYTES,
          MAX_EXCHANGES,
          TRUSTED_FABRIC,
          BODY_CHECKSUM);

  /**
   * Refuses keys under {@value #CLIENT_PREFIX} that are no client setting; keys under {@value
   * #SERVER_PREFIX} and {@value RdmaFlightClient#TRANSFER_PREFIX} are left to their readers.
   *
   * @throws TransferConfigException naming the unknown key
   */
  static void refuseUnknownClientKeys(Map<String, String> props) {
    Map<String, String> own = new HashMap<>();
    props.forEach(
        (k, v) -> {
          if (!k.startsWith(SERVER_PREFIX) && !k.startsWith(RdmaFlightClient.TRANSFER_PREFIX)) {
            own.put(k, v);
          }
        });
    Settings.refuseUnknown(own, CLIENT_PREFIX, names(CLIENT));
  }

  /** Refuses keys under {@value #SERVER_PREFIX} that are no server setting. */
  static void refuseUnknownServerKeys(Map<String, String> props) {
    Settings.refuseUnknown(props, SERVER_PREFIX, names(SERVER));
  }

  /** The JVM system properties under {@value #CLIENT_PREFIX}, as strings. */
  static Map<String, String> clientSystemProperties() {
    Map<String, String> m = new HashMap<>();
    Properties p = System.getProperties();
    for (String k : p.stringPropertyNames()) {
      if (k.startsWith(CLIENT_PREFIX)) {
        m.put(k, p.getProperty(k));
      }
    }
    return m;
  }

  /** The value given for {@code s} under {@code prefix}, else {@code current}. */
  static <T> T given(Map<String, String> props, String prefix, Setting<T> s, T current) {
    String raw = props.get(prefix + s.name());
    return raw == null ? current : s.parse(prefix, raw);
  }

  private static List<String> names(List<Setting<?>> settings) {
    return settings.stream().map(Setting::name).toList();
  }

  private static CompressionUtil.CodecType parseCodec(String key, String v) {
    switch (v.toLowerCase(Locale.ROOT)) {
      case "none":
        return CompressionUtil.CodecType.NO_COMPRESSION;
      case "lz4_frame":
      case "lz4":
        return CompressionUtil.CodecType.LZ4_FRAME;
      case "zstd":
        return CompressionUtil.CodecType.ZSTD;
      default:
        throw new TransferConfigException(
            TransferConfigException.Problem.MALFORMED,
            key,
            key + "=" + v + " is not a codec; expected none, " + "lz4_frame, zstd");
    }
  }

  /** The Markdown table of every Flight key, as docs/FLIGHT.md shows it. */
  public static String markdownTable() {
    List<Settings.Row> rows = new ArrayList<>();
    CLIENT.forEach(s -> rows.add(Settings.Row.of(CLIENT_PREFIX, s)));
    SERVER.forEach(s -> rows.add(Settings.Row.of(SERVER_PREFIX, s)));
    return Settings.markdownTable("| Key | Default | Range | Meaning |", "|---|---|---|---|", rows);
  }

  /** Prints {@link #markdownTable()}; used to regenerate docs/FLIGHT.md's table. */
  public static void main(String[] args) {
    System.out.print(markdownTable());
  }
}
