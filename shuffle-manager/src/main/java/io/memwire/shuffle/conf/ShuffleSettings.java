package io.memwire.shuffle.conf;

import static io.memwire.shuffle.conf.ShuffleConf.PREFIX;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.Setting;
import io.memwire.transfer.settings.Settings;
import io.memwire.transfer.settings.TransportSettings;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Declarations of the RDMA shuffle manager's keys (under {@value ShuffleConf#PREFIX}): each is
 * declared once as a {@link Setting} (the transport's in {@link TransportSettings}, the manager's
 * here). {@link #KEYS} is the table that documents them; docs/SHUFFLE.md is generated from it
 * ({@link #main}) and a test keeps the two equal. {@link ShuffleConf} reads the values.
 */
public final class ShuffleSettings {
  private ShuffleSettings() {}

  /** Serve blocks through Spark's own transfer when one-sided reading is impossible. */
  public static final String FALLBACK = "fallback";

  /** Whether blocks are checked against Spark's shuffle checksums. */
  public static final String VERIFY_BLOCKS = "verifyBlocks";

  /** Most blocks whose reads are posted to one peer as one batch. */
  public static final String READ_BATCH_BLOCKS = "readBatchBlocks";

  /** Most bytes of block data posted to one peer as one batch. */
  public static final String READ_BATCH_BYTES = "readBatchBytes";

  /** Bytes of peers' index files a reader keeps per executor. */
  public static final String INDEX_CACHE_SIZE = "indexCacheSize";

  /** Read one-sided in clear although Spark's network encryption is on. */
  public static final String ALLOW_CLEARTEXT_READS = "allowCleartextReads";

  /** Socket of the node's shuffle service (service mode only). */
  public static final String SERVICE_SOCKET = "service.socket";

  /** How long an executor waits for its node's shuffle service to answer. */
  public static final String SERVICE_TIMEOUT = "service.timeout";

  /** The services' resolve port (service mode). */
  public static final String SERVICE_RESOLVE_PORT = "service.resolvePort";

  /** How long re-resolving one pointer may take. */
  public static final String SERVICE_RESOLVE_TIMEOUT = "service.resolveTimeout";

  /** Users the node's shuffle service may run as. */
  public static final String SERVICE_USER = "service.user";

  private static final long KIB = 1024;
  private static final long MIB = 1024 * KIB;
  private static final long GIB = 1024 * MIB;
  private static final String V010 = "0.1.0";

  /** Declaration of {@link #FALLBACK}. */
  public static final Setting<Boolean> FALLBACK_SETTING =
      Setting.key(FALLBACK)
          .since(V010)
          .doc(
              "Serve a block through Spark's own block transfer when it cannot be read one-sided "
                  + "(peer without an endpoint, provider mismatch or failure, registration budget "
                  + "exhausted, transport failed to start with provider auto). false: such cases fail the "
                  + "task.")
          .bool()
          .withDefault("true");

  /** Declaration of {@link #VERIFY_BLOCKS}. */
  public static final Setting<Boolean> VERIFY_BLOCKS_SETTING =
      Setting.key(VERIFY_BLOCKS)
          .since("0.6.0")
          .doc(
              "Check every block, read one-sided or by Spark from local files, against the "
                  + "checksums Spark wrote (spark.shuffle.checksum.enabled) before Spark "
                  + "deserializes it; a block that does not match twice is a fetch failure. "
                  + "false: blocks are read unverified (counted), Spark's checksum files serve "
                  + "only its own diagnosis.")
          .bool()
          .withDefault("true");

  /** Declaration of {@link #READ_BATCH_BLOCKS}. */
  public static final Setting<Integer> READ_BATCH_BLOCKS_SETTING =
      Setting.key(READ_BATCH_BLOCKS)
          .since(V010)
          .doc("Most blocks whose reads are posted to one peer as one batch.")
          .count(1, 65536)
          .withDefault("512");

  /** Declaration of {@link #READ_BATCH_BYTES}. */
  public static final Setting<Long> READ_BATCH_BYTES_SETTING =
      Setting.key(READ_BATCH_BYTES)
          .since(V010)
          .doc(
              "Most bytes of block data posted to one peer as one batch; a larger block goes alone.")
          .bytes(64 * KIB, GIB)
          .withDefault("64m");

  /** Declaration of {@link #INDEX_CACHE_SIZE}. */
  public static final Setting<Long> INDEX_CACHE_SIZE_SETTING =
      Setting.key(INDEX_CACHE_SIZE)
          .since(V010)
          .doc(
              "Bytes of peers' shuffle index files each executor keeps (per executor, all "
                  + "shuffles). The first reduce task to read a map output reads its whole index (up to "
                  + "64 KiB) and keeps it, so later tasks read block data in one round trip. 0: read only "
                  + "the two index entries of each block, on every fetch.")
          .bytes(0, GIB)
          .withDefault("64m");

  /** Declaration of {@link #ALLOW_CLEARTEXT_READS}. */
  public static final Setting<Boolean> ALLOW_CLEARTEXT_READS_SETTING =
      Setting.key(ALLOW_CLEARTEXT_READS)
          .since(V010)
          .doc(
              "Only matters when Spark encrypts its network (spark.network.crypto.enabled, "
                  + "spark.authenticate.enableSaslEncryption or spark.ssl.rpc.enabled): then by "
                  + "default the transport does not start and every block is read through Spark's own "
                  + "encrypted transfer. true: read blocks one-sided anyway, unencrypted on the wire; "
                  + "only for RDMA fabrics isolated by design. See \"Encryption\" below.")
          .bool()
          .withDefault("false");

  /** Declaration of {@link #SERVICE_SOCKET}. */
  public static final Setting<String> SERVICE_SOCKET_SETTING =
      Setting.key(SERVICE_SOCKET)
          .since("0.2.0")
          .doc(
              "Only with spark.shuffle.sort.io.plugin.class=io.memwire.shuffle.dataio.MemwireShuffleDataIO: "
                  + "the Unix domain socket of the node's Memwire shuffle service "
                  + "(memwire.shuffle.service.socket there). Executors hand each finished map output to "
                  + "it, so reducers read it one-sided from the service after the executor is gone; "
                  + "an executor that finds no service serves its outputs itself (logged once).")
          .text("a file path", (key, v) -> v)
          .optional("(java.io.tmpdir)/memwire-shuffle-service/service.sock");

  /** Declaration of {@link #SERVICE_TIMEOUT}. */
  public static final Setting<Duration> SERVICE_TIMEOUT_SETTING =
      Setting.key(SERVICE_TIMEOUT)
          .since("0.2.0")
          .doc(
              "How long an executor waits for an answer from its node's shuffle service before it "
                  + "publishes the output itself.")
          .duration(100, 600_000)
          .withDefault("10s");

  /** Declaration of {@link #SERVICE_USER}. */
  public static final Setting<Set<String>> SERVICE_USER_SETTING =
      Setting.key(SERVICE_USER)
          .since("0.3.0")
          .doc(
              "Service mode: comma-separated users the node's shuffle service may run as. Before "
                  + "an executor sends anything (its application's token included) it checks the "
                  + "socket's peer credentials and refuses a service running as anyone else, "
                  + "logging who listens. Set it to the NodeManager's user (yarn) when executors "
                  + "run as the submitting user (secure YARN).")
          .text(
              "user names",
              (key, v) -> {
                Set<String> users = new LinkedHashSet<>();
                for (String u : v.split(",")) {
                  if (!u.isBlank()) {
                    users.add(u.trim());
                  }
                }
                if (users.isEmpty()) {
                  throw new TransferConfigException(
                      TransferConfigException.Problem.OUT_OF_RANGE, key, key + " names no user");
                }
                return Set.copyOf(users);
              })
          .optional("root and the executor's own user");

  /** Declaration of {@link #SERVICE_RESOLVE_PORT}. */
  public static final Setting<Integer> SERVICE_RESOLVE_PORT_SETTING =
      Setting.key(SERVICE_RESOLVE_PORT)
          .since("0.6.0")
          .doc(
              "Service mode: the nodes' shuffle services' resolve port "
                  + "(memwire.shuffle.service.resolvePort there). A read of a service-held output "
                  + "that fails because the service restarted (dead region key, or the service "
                  + "gone for a moment) asks that port once for the pointer that replaced it and "
                  + "reads again one-sided: no fetch failure. Unset: off, such reads fail over to "
                  + "Spark's client or fail the fetch. Set it only where every node's service has "
                  + "resolvePort: on a node where nothing listens there, each pointer is retried "
                  + "until service.resolveTimeout (60 s by default) before its blocks fall back.")
          .count(1, 65_535)
          .optional("(off)");

  /** Declaration of {@link #SERVICE_RESOLVE_TIMEOUT}. */
  public static final Setting<Duration> SERVICE_RESOLVE_TIMEOUT_SETTING =
      Setting.key(SERVICE_RESOLVE_TIMEOUT)
          .since("0.6.0")
          .doc(
              "Service mode with service.resolvePort: how long re-resolving one pointer may take "
                  + "in all, a restarting service's start and recovery included. Connects refused "
                  + "meanwhile (nothing listening on the port: the service restarting, or running "
                  + "without resolvePort) are tried again, 100 ms apart doubling up to 2 s, until "
                  + "then; then its blocks fall back (or fail). Each pointer waits this long once "
                  + "per executor, on the fallback threads.")
          .duration(100, 600_000)
          .withDefault("60s");

  /** The manager's own settings (after the transport's), in documentation order. */
  public static final List<Setting<?>> OWN =
      List.of(
          FALLBACK_SETTING,
          VERIFY_BLOCKS_SETTING,
          READ_BATCH_BLOCKS_SETTING,
          READ_BATCH_BYTES_SETTING,
          INDEX_CACHE_SIZE_SETTING,
          ALLOW_CLEARTEXT_READS_SETTING,
          SERVICE_SOCKET_SETTING,
          SERVICE_TIMEOUT_SETTING,
          SERVICE_USER_SETTING,
          SERVICE_RESOLVE_PORT_SETTING,
          SERVICE_RESOLVE_TIMEOUT_SETTING);

  /** Every key (without the prefix), in documentation order: transport keys, then the manager's. */
  public static final Map<String, Key> KEYS;

  static {
    Map<String, Key> k = new LinkedHashMap<>();
    for (Setting<?> t : TransportSettings.ALL) {
      String def = t.defaultText();
      String doc = t.doc();
      if (t == TransportSettings.BIND_ADDRESS) {
        def = "(the executor's host)";
        doc =
            "Address the executor's transfer node listens on and publishes to reducers; by "
                + "default the host of the executor's BlockManager. With verbs it must be an address "
                + "of an RDMA device.";
      } else if (t == TransportSettings.AUTH_SECRET) {
        def = "(spark.authenticate.secret)";
        doc =
            t.doc()
                + " When spark.authenticate=true and this key is unset, Spark's secret is used.";
      }
      k.put(t.name(), new Key(t, def, doc, true));
    }
    for (Setting<?> s : OWN) {
      k.put(s.name(), new Key(s, s.defaultText(), s.doc(), false));
    }
    KEYS = Collections.unmodifiableMap(k);
  }

  /** One documented key: its {@link Setting} as the shuffle manager documents it. */
  public static final class Key {
    private final Setting<?> setting;
    private final String defaultValue;
    private final String doc;
    private final boolean transport;

    Key(Setting<?> setting, String defaultValue, String doc, boolean transport) {
      this.setting = setting;
      this.defaultValue = defaultValue;
      this.doc = doc;
      this.transport = transport;
    }

    /** The key without {@value ShuffleConf#PREFIX}. */
    public String name() {
      return setting.name();
    }

    public String fullName() {
      return PREFIX + name();
    }

    public String defaultValue() {
      return defaultValue;
    }

    /** The allowed values, derived from the bounds the check enforces. */
    public String range() {
      return setting.rangeText();
    }

    public String doc() {
      return doc;
    }

    /** The declaration (parser, typed default, bounds). */
    public Setting<?> setting() {
      return setting;
    }

    /** True for keys passed to the transport ({@link TransferConfig}). */
    public boolean isTransport() {
      return transport;
    }
  }

  /** The Markdown table of {@link #KEYS}, as docs/SHUFFLE.md shows it. */
  public static String markdownTable() {
    return Settings.markdownTable(
        "| Key | Default | Range | Meaning |",
        "|---|---|---|---|",
        KEYS.values().stream()
            .map(k -> new Settings.Row(k.fullName(), k.defaultValue(), k.range(), k.doc()))
            .toList());
  }

  /** Prints {@link #markdownTable()}; used to regenerate docs/SHUFFLE.md's table. */
  public static void main(String[] args) {
    System.out.print(markdownTable());
  }
}
