package io.memwire.shuffle.conf;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The settings of the RDMA shuffle manager: every key under {@value #PREFIX}, validated once at
 * start. {@link #KEYS} is the one table that documents them (docs/SHUFFLE.md is generated from it
 * and a test keeps the two equal). Transport keys are {@link TransferConfig}'s, read with this
 * prefix; the manager's own keys follow them.
 */
public final class ShuffleConf {
  /** Prefix of every key. */
  public static final String PREFIX = "spark.shuffle.rdma.";

  /** Serve blocks through Spark's own transfer when one-sided reading is impossible. */
  public static final String FALLBACK = "fallback";
  /** Most blocks whose reads are posted to one peer as one batch. */
  public static final String READ_BATCH_BLOCKS = "readBatchBlocks";
  /** Most bytes of block data posted to one peer as one batch. */
  public static final String READ_BATCH_BYTES = "readBatchBytes";
  /** Bytes of peers' index files a reader keeps per executor. */
  public static final String INDEX_CACHE_SIZE = "indexCacheSize";
  /** Read one-sided in clear although Spark's network encryption is on. */
  public static final String ALLOW_CLEARTEXT_READS = "allowCleartextReads";

  private static final long KIB = 1024;
  private static final long MIB = 1024 * KIB;
  private static final long GIB = 1024 * MIB;

  /** Every key (without the prefix), in documentation order: transport keys, then the manager's. */
  public static final Map<String, Key> KEYS;

  static {
    Map<String, Key> k = new LinkedHashMap<>();
    for (TransferConfig.Key t : TransferConfig.KEYS.values()) {
      String def = t.defaultValue();
      String doc = t.doc();
      if (t.name().equals(TransferConfig.BIND_ADDRESS)) {
        def = "(the executor's host)";
        doc = "Address the executor's transfer node listens on and publishes to reducers; by "
            + "default the host of the executor's BlockManager. With verbs it must be an address "
            + "of an RDMA device.";
      } else if (t.name().equals(TransferConfig.AUTH_SECRET)) {
        def = "(spark.authenticate.secret)";
        doc = t.doc() + " When spark.authenticate=true and this key is unset, Spark's secret is used.";
      }
      k.put(t.name(), new Key(t.name(), def, t.range(), doc, true));
    }
    k.put(FALLBACK, new Key(FALLBACK, "true", "true, false",
        "Serve a block through Spark's own block transfer when it cannot be read one-sided (peer "
            + "without an endpoint, provider mismatch or failure, registration budget exhausted, "
            + "transport failed to start with provider auto). false: such cases fail the task.",
        false));
    k.put(READ_BATCH_BLOCKS, new Key(READ_BATCH_BLOCKS, "512", "1 to 65536",
        "Most blocks whose reads are posted to one peer as one batch.", false));
    k.put(READ_BATCH_BYTES, new Key(READ_BATCH_BYTES, "64m", "64k to 1g",
        "Most bytes of block data posted to one peer as one batch; a larger block goes alone.",
        false));
    k.put(INDEX_CACHE_SIZE, new Key(INDEX_CACHE_SIZE, "64m", "0 to 1g",
        "Bytes of peers' shuffle index files each executor keeps (per executor, all shuffles). The "
            + "first reduce task to read a map output reads its whole index (up to 64 KiB) and keeps "
            + "it, so later tasks read block data in one round trip. 0: read only the two index "
            + "entries of each block, on every fetch.",
        false));
    k.put(ALLOW_CLEARTEXT_READS, new Key(ALLOW_CLEARTEXT_READS, "false", "true, false",
        "Only matters when Spark encrypts its network (spark.network.crypto.enabled, "
            + "spark.authenticate.enableSaslEncryption or spark.ssl.rpc.enabled): then by default "
            + "the transport does not start and every block is read through Spark's own encrypted "
            + "transfer. true: read blocks one-sided anyway, unencrypted on the wire; only for RDMA "
            + "fabrics isolated by design. See \"Encryption\" below.",
        false));
    KEYS = Collections.unmodifiableMap(k);
  }

  /** One documented key. */
  public static final class Key {
    private final String name;
    private final String defaultValue;
    private final String range;
    private final String doc;
    private final boolean transport;

    Key(String name, String defaultValue, String range, String doc, boolean transport) {
      this.name = name;
      this.defaultValue = defaultValue;
      this.range = range;
      this.doc = doc;
      this.transport = transport;
    }

    /** The key without {@value ShuffleConf#PREFIX}. */
    public String name() {
      return name;
    }

    public String fullName() {
      return PREFIX + name;
    }

    public String defaultValue() {
      return defaultValue;
    }

    public String range() {
      return range;
    }

    public String doc() {
      return doc;
    }

    /** True for keys passed to the transport ({@link TransferConfig}). */
    public boolean isTransport() {
      return transport;
    }
  }

  private final TransferConfig transfer;
  private final boolean bindAddressGiven;
  private final boolean fallback;
  private final int readBatchBlocks;
  private final long readBatchBytes;
  private final long indexCacheSize;
  private final boolean allowCleartextReads;

  private ShuffleConf(TransferConfig transfer, boolean bindAddressGiven, boolean fallback,
      int readBatchBlocks, long readBatchBytes, long indexCacheSize, boolean allowCleartextReads) {
    this.allowCleartextReads = allowCleartextReads;
    this.transfer = transfer;
    this.bindAddressGiven = bindAddressGiven;
    this.fallback = fallback;
    this.readBatchBlocks = readBatchBlocks;
    this.readBatchBytes = readBatchBytes;
    this.indexCacheSize = indexCacheSize;
  }

  /**
   * Reads and validates every {@value #PREFIX} key of a Spark configuration (given as a map).
   *
   * @param sparkSecret Spark's authentication secret when {@code spark.authenticate=true}, else
   *     null; used as the transport's secret unless {@code authSecret} is set explicitly
   * @throws TransferConfigException naming the full key of the first unknown or bad value
   */
  public static ShuffleConf parse(Map<String, String> sparkConf, String sparkSecret) {
    Map<String, String> ours = new TreeMap<>();
    for (Map.Entry<String, String> e : sparkConf.entrySet()) {
      if (e.getKey().startsWith(PREFIX)) {
        String name = e.getKey().substring(PREFIX.length());
        if (!KEYS.containsKey(name)) {
          throw new TransferConfigException("unknown configuration key " + e.getKey()
              + "; known keys: " + KEYS.keySet());
        }
        ours.put(name, e.getValue());
      }
    }
    Map<String, String> transportProps = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : ours.entrySet()) {
      if (KEYS.get(e.getKey()).isTransport()) {
        transportProps.put(PREFIX + e.getKey(), e.getValue());
      }
    }
    if (sparkSecret != null && !ours.containsKey(TransferConfig.AUTH_SECRET)) {
      transportProps.put(PREFIX + TransferConfig.AUTH_SECRET, sparkSecret);
    }
    TransferConfig transfer = TransferConfig.fromProperties(transportProps, PREFIX);
    boolean fallback = parseBoolean(FALLBACK, ours.getOrDefault(FALLBACK, "true"));
    int blocks = (int) range(READ_BATCH_BLOCKS,
        parseLong(READ_BATCH_BLOCKS, ours.getOrDefault(READ_BATCH_BLOCKS, "512")), 1, 65536);
    long bytes = range(READ_BATCH_BYTES,
        parseSize(READ_BATCH_BYTES, ours.getOrDefault(READ_BATCH_BYTES, "64m")), 64 * KIB, GIB);
    long indexCache = range(INDEX_CACHE_SIZE,
        parseSize(INDEX_CACHE_SIZE, ours.getOrDefault(INDEX_CACHE_SIZE, "64m")), 0, GIB);
    boolean cleartext = parseBoolean(ALLOW_CLEARTEXT_READS,
        ours.getOrDefault(ALLOW_CLEARTEXT_READS, "false"));
    return new ShuffleConf(transfer, ours.containsKey(TransferConfig.BIND_ADDRESS), fallback,
        blocks, bytes, indexCache, cleartext);
  }

  /** The transport settings; the bind address is the executor's host unless given explicitly. */
  public TransferConfig transfer(String executorHost) {
    if (bindAddressGiven || executorHost == null) {
      return transfer;
    }
    return transfer.toBuilder().prefix(PREFIX).bindAddress(executorHost).build();
  }

  public ProviderKind provider() {
    return transfer.provider();
  }

  public boolean fallback() {
    return fallback;
  }

  public int readBatchBlocks() {
    return readBatchBlocks;
  }

  public long readBatchBytes() {
    return readBatchBytes;
  }

  public long indexCacheSize() {
    return indexCacheSize;
  }

  /** True when blocks may be read one-sided in clear although Spark encrypts its network. */
  public boolean allowCleartextReads() {
    return allowCleartextReads;
  }

  private static boolean parseBoolean(String key, String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    if (s.equals("true") || s.equals("false")) {
      return Boolean.parseBoolean(s);
    }
    throw new TransferConfigException(PREFIX + key + "=" + v + " is not true or false");
  }

  private static long parseLong(String key, String v) {
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw new TransferConfigException(PREFIX + key + "=" + v + " is not a whole number");
    }
  }

  private static long parseSize(String key, String v) {
    try {
      return TransferConfig.parseBytes(v);
    } catch (RuntimeException e) {
      throw new TransferConfigException(PREFIX + key + "=" + v
          + " is not a size (bytes, or a number with k, m, g)");
    }
  }

  private static long range(String key, long v, long min, long max) {
    if (v < min || v > max) {
      throw new TransferConfigException(PREFIX + key + "=" + v + " is out of range: "
          + KEYS.get(key).range());
    }
    return v;
  }

  /** The Markdown table of {@link #KEYS}, as docs/SHUFFLE.md shows it. */
  public static String markdownTable() {
    StringBuilder sb = new StringBuilder();
    sb.append("| Key | Default | Range | Meaning |\n|---|---|---|---|\n");
    for (Key k : KEYS.values()) {
      sb.append("| `").append(k.fullName()).append("` | ").append(k.defaultValue()).append(" | ")
          .append(k.range()).append(" | ").append(k.doc()).append(" |\n");
    }
    return sb.toString();
  }

  /** Prints {@link #markdownTable()}; used to regenerate docs/SHUFFLE.md's table. */
  public static void main(String[] args) {
    System.out.print(markdownTable());
  }

  @Override
  public String toString() {
    return "ShuffleConf{" + transfer + ", fallback=" + fallback + ", readBatch=" + readBatchBlocks
        + " blocks/" + readBatchBytes + " bytes, indexCache=" + indexCacheSize
        + ", allowCleartextReads=" + allowCleartextReads + "}";
  }
}
