package io.memwire.transfer;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Validated settings of a {@link TransferNode}. Every key is listed in {@link #KEYS} with its
 * default, range and meaning; that table is the single place keys are documented (the README and
 * docs/CONFIGURATION.md print it). Consumers put their own prefix in front: {@code
 * spark.shuffle.rdma.} in Spark, {@code memwire.flight.} for Flight, {@code memwire.transfer.} for
 * system properties.
 */
public final class TransferConfig {

  /** One documented configuration key. */
  public static final class Key {
    private final String name;
    private final String defaultValue;
    private final String range;
    private final String doc;

    Key(String name, String defaultValue, String range, String doc) {
      this.name = name;
      this.defaultValue = defaultValue;
      this.range = range;
      this.doc = doc;
    }

    public String name() {
      return name;
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
  }

  private static final long KIB = 1024;
  private static final long MIB = 1024 * KIB;
  private static final long GIB = 1024 * MIB;

  public static final String PROVIDER = "provider";
  public static final String BIND_ADDRESS = "bindAddress";
  public static final String DEVICE = "device";
  public static final String PORT = "port";
  public static final String CONNECT_TIMEOUT = "connectTimeout";
  public static final String READ_TIMEOUT = "readTimeout";
  public static final String PEER_BACKOFF = "peerBackoff";
  public static final String MAX_OUTSTANDING_REQUESTS = "maxOutstandingRequests";
  public static final String MAX_OUTSTANDING_BYTES = "maxOutstandingBytes";
  public static final String MAX_TRANSFER_SIZE = "maxTransferSize";
  public static final String MAX_SEGMENT_SIZE = "maxSegmentSize";
  public static final String REGISTRATION_BUDGET = "registrationBudget";
  public static final String POOL_MAX_BYTES = "poolMaxBytes";
  public static final String IO_THREADS = "ioThreads";
  public static final String AUTH_SECRET = "authSecret";
  public static final String MAX_CONNECTIONS = "maxConnections";
  public static final String IDLE_TIMEOUT = "idleTimeout";
  public static final String WRITE_TIMEOUT = "writeTimeout";

  /** Every key, in documentation order. */
  public static final Map<String, Key> KEYS;

  static {
    Map<String, Key> k = new LinkedHashMap<>();
    put(k, PROVIDER, "auto", "auto, verbs, tcp",
        "Transport for one-sided reads. auto uses verbs when its probe passes, else tcp (logged).");
    put(k, BIND_ADDRESS, "127.0.0.1", "an IP address or hostname of this node, not a wildcard",
        "Address the node listens on and publishes in region descriptors. With verbs it must be an "
            + "address of an RDMA device.");
    put(k, DEVICE, "(none)", "an RDMA device name, e.g. mlx5_0",
        "verbs only: bind to the first IPv4 address of this device's network interface when no "
            + "bindAddress is given.");
    put(k, PORT, "0", "0 to 65535; 0 = ephemeral", "Listening port.");
    put(k, CONNECT_TIMEOUT, "10s", "100ms to 10min",
        "Deadline for opening a connection (route, connect, handshake).");
    put(k, READ_TIMEOUT, "60s", "100ms to 1h",
        "Deadline for one read; when it passes the connection is failed and reads on it fail.");
    put(k, PEER_BACKOFF, "5s", "0 to 10min; 0 = off",
        "After a connection to a peer could not be opened (refused, unreachable, timed out, "
            + "handshake rejected), further attempts fail at once for this long, naming the first "
            + "failure, instead of each waiting up to connectTimeout.");
    put(k, MAX_OUTSTANDING_REQUESTS, "64", "1 to 4096",
        "Reads in flight per connection (verbs: also capped by the device's max_qp_rd_atom).");
    put(k, MAX_OUTSTANDING_BYTES, "64m", "64k to 1g", "Bytes in flight per connection.");
    put(k, MAX_TRANSFER_SIZE, "1m", "4k to 64m",
        "Largest single wire read; larger reads are split into pieces of this size.");
    put(k, MAX_SEGMENT_SIZE, "1g", "4k to 2g-1",
        "Largest registered segment; larger files are registered as several segments.");
    put(k, REGISTRATION_BUDGET, "16g", "1m to 1p",
        "Most bytes this node keeps registered (regions plus the read-buffer pool). Beyond it "
            + "register() fails with RegistrationException. With verbs keep it under ulimit -l.");
    put(k, POOL_MAX_BYTES, "256m", "1m to 64g",
        "Most bytes the read-buffer pool keeps registered for reuse.");
    put(k, IO_THREADS, "2", "1 to 64", "tcp: I/O threads shared by all connections of the node.");
    put(k, AUTH_SECRET, "(none)", "any non-empty string",
        "Shared secret; peers prove knowledge of it with an HMAC-SHA256 challenge (tcp: in the "
            + "connection handshake; verbs: over TCP on the node's port before each queue pair).");
    put(k, MAX_CONNECTIONS, "4096", "1 to 1048576",
        "tcp: most connections this node serves at once; further ones are refused at once "
            + "(the peer is told the node is at its connection limit).");
    put(k, IDLE_TIMEOUT, "10min", "1s to 24h",
        "tcp: a served connection with no request and nothing to send for this long is closed; "
            + "a reader reconnects on its next read.");
    put(k, WRITE_TIMEOUT, "60s", "100ms to 1h",
        "tcp: a served connection whose peer takes none of its pending response bytes for this "
            + "long is closed, releasing the regions those responses pinned.");
    KEYS = Collections.unmodifiableMap(k);
  }

  private static void put(Map<String, Key> m, String name, String def, String range, String doc) {
    m.put(name, new Key(name, def, range, doc));
  }

  private final ProviderKind provider;
  private final String bindAddress;
  private final String device;
  private final int port;
  private final Duration connectTimeout;
  private final Duration readTimeout;
  private final Duration peerBackoff;
  private final int maxOutstandingRequests;
  private final long maxOutstandingBytes;
  private final int maxTransferSize;
  private final int maxSegmentSize;
  private final long registrationBudget;
  private final long poolMaxBytes;
  private final int ioThreads;
  private final byte[] authSecret;
  private final int maxConnections;
  private final Duration idleTimeout;
  private final Duration writeTimeout;

  private TransferConfig(Builder b) {
    this.provider = b.provider;
    this.bindAddress = b.bindAddress;
    this.device = b.device;
    this.port = b.port;
    this.connectTimeout = b.connectTimeout;
    this.readTimeout = b.readTimeout;
    this.peerBackoff = b.peerBackoff;
    this.maxOutstandingRequests = b.maxOutstandingRequests;
    this.maxOutstandingBytes = b.maxOutstandingBytes;
    this.maxTransferSize = b.maxTransferSize;
    this.maxSegmentSize = b.maxSegmentSize;
    this.registrationBudget = b.registrationBudget;
    this.poolMaxBytes = b.poolMaxBytes;
    this.ioThreads = b.ioThreads;
    this.authSecret = b.authSecret;
    this.maxConnections = b.maxConnections;
    this.idleTimeout = b.idleTimeout;
    this.writeTimeout = b.writeTimeout;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** All defaults: provider auto, bound to 127.0.0.1 on an ephemeral port. */
  public static TransferConfig defaults() {
    return builder().build();
  }

  /**
   * Reads the keys of {@link #KEYS} from {@code props}, each prefixed with {@code prefix}, and
   * validates them; unknown keys under the prefix are refused so typos do not pass silently.
   *
   * @throws TransferConfigException naming the full key of the first bad value
   */
  public static TransferConfig fromProperties(Map<String, String> props, String prefix) {
    Builder b = builder().prefix(prefix);
    for (Map.Entry<String, String> e : props.entrySet()) {
      if (!e.getKey().startsWith(prefix)) {
        continue;
      }
      String name = e.getKey().substring(prefix.length());
      if (!KEYS.containsKey(name)) {
        throw new TransferConfigException("unknown configuration key " + e.getKey()
            + "; known keys under " + prefix + ": " + KEYS.keySet());
      }
      b.set(name, e.getValue());
    }
    return b.build();
  }

  public Builder toBuilder() {
    Builder b = new Builder();
    b.provider = provider;
    b.bindAddress = bindAddress;
    b.device = device;
    b.port = port;
    b.connectTimeout = connectTimeout;
    b.readTimeout = readTimeout;
    b.peerBackoff = peerBackoff;
    b.maxOutstandingRequests = maxOutstandingRequests;
    b.maxOutstandingBytes = maxOutstandingBytes;
    b.maxTransferSize = maxTransferSize;
    b.maxSegmentSize = maxSegmentSize;
    b.registrationBudget = registrationBudget;
    b.poolMaxBytes = poolMaxBytes;
    b.ioThreads = ioThreads;
    b.authSecret = authSecret;
    b.maxConnections = maxConnections;
    b.idleTimeout = idleTimeout;
    b.writeTimeout = writeTimeout;
    return b;
  }

  public ProviderKind provider() {
    return provider;
  }

  public String bindAddress() {
    return bindAddress;
  }

  /** The RDMA device name to bind to (verbs), if one was given. */
  public Optional<String> device() {
    return Optional.ofNullable(device);
  }

  public int port() {
    return port;
  }

  public Duration connectTimeout() {
    return connectTimeout;
  }

  public Duration readTimeout() {
    return readTimeout;
  }

  /** How long a peer that could not be connected to is refused at once; zero: never. */
  public Duration peerBackoff() {
    return peerBackoff;
  }

  public int maxOutstandingRequests() {
    return maxOutstandingRequests;
  }

  public long maxOutstandingBytes() {
    return maxOutstandingBytes;
  }

  public int maxTransferSize() {
    return maxTransferSize;
  }

  public int maxSegmentSize() {
    return maxSegmentSize;
  }

  public long registrationBudget() {
    return registrationBudget;
  }

  public long poolMaxBytes() {
    return poolMaxBytes;
  }

  public int ioThreads() {
    return ioThreads;
  }

  /** tcp: most connections served at once. */
  public int maxConnections() {
    return maxConnections;
  }

  /** tcp: how long a served connection may stay idle before it is closed. */
  public Duration idleTimeout() {
    return idleTimeout;
  }

  /** tcp: how long a served connection may make no write progress before it is closed. */
  public Duration writeTimeout() {
    return writeTimeout;
  }

  /** The shared secret, if any (a copy). */
  public Optional<byte[]> authSecret() {
    return Optional.ofNullable(authSecret).map(byte[]::clone);
  }

  /** The bind address resolved to an IP; a wildcard address is refused. */
  public InetAddress resolveBindAddress() {
    try {
      InetAddress a = InetAddress.getByName(bindAddress);
      if (a.isAnyLocalAddress()) {
        throw new TransferConfigException(
            BIND_ADDRESS + "=" + bindAddress + " is a wildcard; give the address peers should use");
      }
      return a;
    } catch (UnknownHostException e) {
      throw new TransferConfigException(BIND_ADDRESS + "=" + bindAddress + " does not resolve", e);
    }
  }

  @Override
  public String toString() {
    return "TransferConfig{provider=" + provider + ", bind=" + bindAddress + ":" + port
        + (device != null ? ", device=" + device : "")
        + ", connectTimeout=" + connectTimeout.toMillis() + "ms, readTimeout="
        + readTimeout.toMillis() + "ms, peerBackoff=" + peerBackoff.toMillis()
        + "ms, maxOutstanding=" + maxOutstandingRequests + "/"
        + maxOutstandingBytes + "B, maxTransfer=" + maxTransferSize + ", maxSegment="
        + maxSegmentSize + ", budget=" + registrationBudget + ", pool=" + poolMaxBytes
        + ", ioThreads=" + ioThreads + ", auth=" + (authSecret != null) + ", maxConnections="
        + maxConnections + ", idleTimeout=" + idleTimeout.toMillis() + "ms, writeTimeout="
        + writeTimeout.toMillis() + "ms}";
  }

  /** Builder; every setter validates and names the key in its error. */
  public static final class Builder {
    private String prefix = "";
    private ProviderKind provider = ProviderKind.AUTO;
    private String bindAddress = "127.0.0.1";
    private String device;
    private int port;
    private Duration connectTimeout = Duration.ofSeconds(10);
    private Duration readTimeout = Duration.ofSeconds(60);
    private Duration peerBackoff = Duration.ofSeconds(5);
    private int maxOutstandingRequests = 64;
    private long maxOutstandingBytes = 64 * MIB;
    private int maxTransferSize = (int) MIB;
    private int maxSegmentSize = (int) GIB;
    private long registrationBudget = 16 * GIB;
    private long poolMaxBytes = 256 * MIB;
    private int ioThreads = 2;
    private byte[] authSecret;
    private int maxConnections = 4096;
    private Duration idleTimeout = Duration.ofMinutes(10);
    private Duration writeTimeout = Duration.ofSeconds(60);

    private Builder() {}

    /** Prefix shown in error messages (for example {@code spark.shuffle.rdma.}). */
    public Builder prefix(String p) {
      this.prefix = p;
      return this;
    }

    /** Sets a key by name from its string form, as in a properties file. */
    public Builder set(String name, String value) {
      String v = value == null ? null : value.trim();
      switch (name) {
        case PROVIDER:
          return provider(ProviderKind.parse(prefix + name, v));
        case BIND_ADDRESS:
          return bindAddress(v);
        case DEVICE:
          return device(v);
        case PORT:
          return port((int) parseLong(name, v));
        case CONNECT_TIMEOUT:
          return connectTimeout(parseDuration(name, v));
        case READ_TIMEOUT:
          return readTimeout(parseDuration(name, v));
        case PEER_BACKOFF:
          return peerBackoff(parseDuration(name, v));
        case MAX_OUTSTANDING_REQUESTS:
          return maxOutstandingRequests((int) parseLong(name, v));
        case MAX_OUTSTANDING_BYTES:
          return maxOutstandingBytes(parseSize(name, v));
        case MAX_TRANSFER_SIZE:
          return maxTransferSize(checkedInt(name, parseSize(name, v)));
        case MAX_SEGMENT_SIZE:
          return maxSegmentSize(checkedInt(name, parseSize(name, v)));
        case REGISTRATION_BUDGET:
          return registrationBudget(parseSize(name, v));
        case POOL_MAX_BYTES:
          return poolMaxBytes(parseSize(name, v));
        case IO_THREADS:
          return ioThreads((int) parseLong(name, v));
        case AUTH_SECRET:
          return authSecret(v);
        case MAX_CONNECTIONS:
          return maxConnections((int) range(name, parseLong(name, v), 1, 1 << 20));
        case IDLE_TIMEOUT:
          return idleTimeout(parseDuration(name, v));
        case WRITE_TIMEOUT:
          return writeTimeout(parseDuration(name, v));
        default:
          throw new TransferConfigException("unknown configuration key " + prefix + name
              + "; known keys: " + KEYS.keySet());
      }
    }

    public Builder provider(ProviderKind p) {
      this.provider = p;
      return this;
    }

    public Builder bindAddress(String a) {
      if (a == null || a.isBlank()) {
        throw new TransferConfigException(prefix + BIND_ADDRESS + " must not be empty");
      }
      this.bindAddress = a.trim();
      return this;
    }

    public Builder device(String d) {
      this.device = d == null || d.isBlank() ? null : d.trim();
      return this;
    }

    public Builder port(int p) {
      this.port = (int) range(PORT, p, 0, 65535);
      return this;
    }

    public Builder connectTimeout(Duration d) {
      range(CONNECT_TIMEOUT, d.toMillis(), 100, 600_000);
      this.connectTimeout = d;
      return this;
    }

    public Builder readTimeout(Duration d) {
      range(READ_TIMEOUT, d.toMillis(), 100, 3_600_000);
      this.readTimeout = d;
      return this;
    }

    public Builder peerBackoff(Duration d) {
      range(PEER_BACKOFF, d.toMillis(), 0, 600_000);
      this.peerBackoff = d;
      return this;
    }

    public Builder maxOutstandingRequests(int n) {
      this.maxOutstandingRequests = (int) range(MAX_OUTSTANDING_REQUESTS, n, 1, 4096);
      return this;
    }

    public Builder maxOutstandingBytes(long n) {
      this.maxOutstandingBytes = range(MAX_OUTSTANDING_BYTES, n, 64 * KIB, GIB);
      return this;
    }

    public Builder maxTransferSize(int n) {
      this.maxTransferSize = (int) range(MAX_TRANSFER_SIZE, n, 4 * KIB, 64 * MIB);
      return this;
    }

    public Builder maxSegmentSize(int n) {
      this.maxSegmentSize = (int) range(MAX_SEGMENT_SIZE, n, 4 * KIB, Integer.MAX_VALUE);
      return this;
    }

    public Builder registrationBudget(long n) {
      this.registrationBudget = range(REGISTRATION_BUDGET, n, MIB, 1L << 50);
      return this;
    }

    public Builder poolMaxBytes(long n) {
      this.poolMaxBytes = range(POOL_MAX_BYTES, n, MIB, 64 * GIB);
      return this;
    }

    public Builder ioThreads(int n) {
      this.ioThreads = (int) range(IO_THREADS, n, 1, 64);
      return this;
    }

    public Builder maxConnections(int n) {
      this.maxConnections = (int) range(MAX_CONNECTIONS, n, 1, 1 << 20);
      return this;
    }

    public Builder idleTimeout(Duration d) {
      range(IDLE_TIMEOUT, d.toMillis(), 1_000, 86_400_000);
      this.idleTimeout = d;
      return this;
    }

    public Builder writeTimeout(Duration d) {
      range(WRITE_TIMEOUT, d.toMillis(), 100, 3_600_000);
      this.writeTimeout = d;
      return this;
    }

    public Builder authSecret(String secret) {
      if (secret == null) {
        this.authSecret = null;
        return this;
      }
      if (secret.isEmpty()) {
        throw new TransferConfigException(prefix + AUTH_SECRET + " must not be empty when set");
      }
      this.authSecret = secret.getBytes(StandardCharsets.UTF_8);
      return this;
    }

    public Builder authSecret(byte[] secret) {
      if (secret != null && secret.length == 0) {
        throw new TransferConfigException(prefix + AUTH_SECRET + " must not be empty when set");
      }
      this.authSecret = secret == null ? null : secret.clone();
      return this;
    }

    public TransferConfig build() {
      if (maxTransferSize > maxOutstandingBytes) {
        throw new TransferConfigException(prefix + MAX_TRANSFER_SIZE + "=" + maxTransferSize
            + " exceeds " + prefix + MAX_OUTSTANDING_BYTES + "=" + maxOutstandingBytes);
      }
      if (poolMaxBytes > registrationBudget) {
        throw new TransferConfigException(prefix + POOL_MAX_BYTES + "=" + poolMaxBytes
            + " exceeds " + prefix + REGISTRATION_BUDGET + "=" + registrationBudget);
      }
      return new TransferConfig(this);
    }

    private long range(String key, long v, long min, long max) {
      if (v < min || v > max) {
        throw new TransferConfigException(prefix + key + "=" + v + " is out of range ["
            + min + ", " + max + "]: " + KEYS.get(key).range());
      }
      return v;
    }

    private int checkedInt(String key, long v) {
      if (v > Integer.MAX_VALUE) {
        throw new TransferConfigException(prefix + key + "=" + v + " is out of range: "
            + KEYS.get(key).range());
      }
      return (int) v;
    }

    private long parseLong(String key, String v) {
      try {
        return Long.parseLong(v);
      } catch (NumberFormatException | NullPointerException e) {
        throw new TransferConfigException(prefix + key + "=" + v + " is not a whole number");
      }
    }

    private long parseSize(String key, String v) {
      try {
        return parseBytes(v);
      } catch (RuntimeException e) {
        throw new TransferConfigException(prefix + key + "=" + v
            + " is not a size (bytes, or a number with k, m, g, t, p)");
      }
    }

    private Duration parseDuration(String key, String v) {
      try {
        return parseTime(v);
      } catch (RuntimeException e) {
        throw new TransferConfigException(prefix + key + "=" + v
            + " is not a duration (milliseconds, or a number with ms, s, min, h)");
      }
    }
  }

  /** Parses {@code 4096}, {@code 64k}, {@code 1m}, {@code 2g}, {@code 1t}, {@code 1p} (also kb, mb, ...). */
  public static long parseBytes(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    if (s.endsWith("b") && s.length() > 1 && !Character.isDigit(s.charAt(s.length() - 2))) {
      s = s.substring(0, s.length() - 1);
    }
    long mult = 1;
    char last = s.charAt(s.length() - 1);
    if (!Character.isDigit(last)) {
      mult = switch (last) {
        case 'k' -> KIB;
        case 'm' -> MIB;
        case 'g' -> GIB;
        case 't' -> 1024 * GIB;
        case 'p' -> 1024 * 1024 * GIB;
        case 'b' -> 1;
        default -> throw new IllegalArgumentException(v);
      };
      s = s.substring(0, s.length() - 1);
    }
    return Math.multiplyExact(Long.parseLong(s.trim()), mult);
  }

  /** Parses {@code 500} (ms), {@code 500ms}, {@code 10s}, {@code 2min}, {@code 1h}. */
  public static Duration parseTime(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    if (s.endsWith("ms")) {
      return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2).trim()));
    } else if (s.endsWith("min")) {
      return Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 3).trim()));
    } else if (s.endsWith("s")) {
      return Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1).trim()));
    } else if (s.endsWith("m")) {
      return Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 1).trim()));
    } else if (s.endsWith("h")) {
      return Duration.ofHours(Long.parseLong(s.substring(0, s.length() - 1).trim()));
    }
    return Duration.ofMillis(Long.parseLong(s));
  }
}
