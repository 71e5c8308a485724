package io.memwire.transfer;

import io.memwire.transfer.settings.Setting;
import io.memwire.transfer.settings.Settings;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.settings.Units;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;

/**
 * Validated settings of a {@link TransferNode}. Each key is declared once, as a {@link Setting} in
 * {@link TransportSettings} (name, typed default, parser, range, doc, since); {@link #KEYS} lists
 * them for consumers and docs/CONFIGURATION.md shows the table generated from them. Consumers put
 * their own prefix in front: {@code spark.shuffle.rdma.} in Spark, {@code memwire.flight.} for
 * Flight, {@code memwire.transfer.} for system properties.
 */
public final class TransferConfig {

  /** One documented configuration key: a view of its {@link Setting}. */
  public static final class Key {
    private final Setting<?> setting;

    Key(Setting<?> setting) {
      this.setting = setting;
    }

    public String name() {
      return setting.name();
    }

    /** The default as documented. */
    public String defaultValue() {
      return setting.defaultText();
    }

    /** The allowed values as documented, derived from the bounds the check enforces. */
    public String range() {
      return setting.rangeText();
    }

    public String doc() {
      return setting.doc();
    }

    /** The declaration this key shows. */
    public Setting<?> setting() {
      return setting;
    }
  }

  public static final String PROVIDER = TransportSettings.PROVIDER.name();
  public static final String BIND_ADDRESS = TransportSettings.BIND_ADDRESS.name();
  public static final String DEVICE = TransportSettings.DEVICE.name();
  public static final String PORT = TransportSettings.PORT.name();
  public static final String CONNECT_TIMEOUT = TransportSettings.CONNECT_TIMEOUT.name();
  public static final String READ_TIMEOUT = TransportSettings.READ_TIMEOUT.name();
  public static final String PEER_BACKOFF = TransportSettings.PEER_BACKOFF.name();
  public static final String CONNECTION_IDLE_TIMEOUT =
      TransportSettings.CONNECTION_IDLE_TIMEOUT.name();
  public static final String MAX_OUTSTANDING_REQUESTS =
      TransportSettings.MAX_OUTSTANDING_REQUESTS.name();
  public static final String MAX_OUTSTANDING_BYTES = TransportSettings.MAX_OUTSTANDING_BYTES.name();
  public static final String MAX_TRANSFER_SIZE = TransportSettings.MAX_TRANSFER_SIZE.name();
  public static final String MAX_SEGMENT_SIZE = TransportSettings.MAX_SEGMENT_SIZE.name();
  public static final String REGISTRATION_BUDGET = TransportSettings.REGISTRATION_BUDGET.name();
  public static final String POOL_MAX_BYTES = TransportSettings.POOL_MAX_BYTES.name();
  public static final String IO_THREADS = TransportSettings.IO_THREADS.name();
  public static final String AUTH_SECRET = TransportSettings.AUTH_SECRET.name();
  public static final String MAX_CONNECTIONS = TransportSettings.MAX_CONNECTIONS.name();
  public static final String IDLE_TIMEOUT = TransportSettings.IDLE_TIMEOUT.name();
  public static final String WRITE_TIMEOUT = TransportSettings.WRITE_TIMEOUT.name();

  /** Every key, in documentation order. */
  public static final Map<String, Key> KEYS;

  /** How a parsed value of each key reaches the builder. */
  private static final Map<String, BiConsumer<Builder, Object>> BINDINGS;

  static {
    Map<String, Key> k = new LinkedHashMap<>();
    for (Setting<?> s : TransportSettings.ALL) {
      k.put(s.name(), new Key(s));
    }
    KEYS = Collections.unmodifiableMap(k);
    Map<String, BiConsumer<Builder, Object>> b = new HashMap<>();
    bind(b, TransportSettings.PROVIDER, Builder::provider);
    bind(b, TransportSettings.BIND_ADDRESS, Builder::bindAddress);
    bind(b, TransportSettings.DEVICE, Builder::device);
    bind(b, TransportSettings.PORT, Builder::port);
    bind(b, TransportSettings.CONNECT_TIMEOUT, Builder::connectTimeout);
    bind(b, TransportSettings.READ_TIMEOUT, Builder::readTimeout);
    bind(b, TransportSettings.PEER_BACKOFF, Builder::peerBackoff);
    bind(b, TransportSettings.CONNECTION_IDLE_TIMEOUT, Builder::connectionIdleTimeout);
    bind(b, TransportSettings.MAX_OUTSTANDING_REQUESTS, Builder::maxOutstandingRequests);
    bind(b, TransportSettings.MAX_OUTSTANDING_BYTES, Builder::maxOutstandingBytes);
    bind(b, TransportSettings.MAX_TRANSFER_SIZE, (x, v) -> x.maxTransferSize(Math.toIntExact(v)));
    bind(b, TransportSettings.MAX_SEGMENT_SIZE, (x, v) -> x.maxSegmentSize(Math.toIntExact(v)));
    bind(b, TransportSettings.REGISTRATION_BUDGET, Builder::registrationBudget);
    bind(b, TransportSettings.POOL_MAX_BYTES, Builder::poolMaxBytes);
    bind(b, TransportSettings.IO_THREADS, Builder::ioThreads);
    bind(b, TransportSettings.AUTH_SECRET, (Builder x, String v) -> x.authSecret(v));
    bind(b, TransportSettings.MAX_CONNECTIONS, Builder::maxConnections);
    bind(b, TransportSettings.IDLE_TIMEOUT, Builder::idleTimeout);
    bind(b, TransportSettings.WRITE_TIMEOUT, Builder::writeTimeout);
    if (!b.keySet().equals(KEYS.keySet())) {
      throw new IllegalStateException("every transport setting needs a builder binding");
    }
    BINDINGS = b;
  }

  @SuppressWarnings("unchecked")
  private static <T> void bind(
      Map<String, BiConsumer<Builder, Object>> m, Setting<T> s, BiConsumer<Builder, T> setter) {
    m.put(s.name(), (builder, v) -> setter.accept(builder, (T) v));
  }

  private final ProviderKind provider;
  private final String bindAddress;
  private final String device;
  private final int port;
  private final Duration connectTimeout;
  private final Duration readTimeout;
  private final Duration peerBackoff;
  private final Duration connectionIdleTimeout;
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
    this.connectionIdleTimeout = b.connectionIdleTimeout;
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
    Settings.refuseUnknown(props, prefix, KEYS.keySet());
    Builder b = builder().prefix(prefix);
    for (Map.Entry<String, String> e : props.entrySet()) {
      if (e.getKey().startsWith(prefix)) {
        b.set(e.getKey().substring(prefix.length()), e.getValue());
      }
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
    b.connectionIdleTimeout = connectionIdleTimeout;
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

  /**
   * How long an outgoing connection may go without reads and without being handed out before the
   * node closes it; zero: never.
   */
  public Duration connectionIdleTimeout() {
    return connectionIdleTimeout;
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
    return "TransferConfig{provider="
        + provider
        + ", bind="
        + bindAddress
        + ":"
        + port
        + (device != null ? ", device=" + device : "")
        + ", connectTimeout="
        + connectTimeout.toMillis()
        + "ms, readTimeout="
        + readTimeout.toMillis()
        + "ms, peerBackoff="
        + peerBackoff.toMillis()
        + "ms, connectionIdleTimeout="
        + connectionIdleTimeout.toMillis()
        + "ms, maxOutstanding="
        + maxOutstandingRequests
        + "/"
        + maxOutstandingBytes
        + "B, maxTransfer="
        + maxTransferSize
        + ", maxSegment="
        + maxSegmentSize
        + ", budget="
        + registrationBudget
        + ", pool="
        + poolMaxBytes
        + ", ioThreads="
        + ioThreads
        + ", auth="
        + (authSecret != null)
        + ", maxConnections="
        + maxConnections
        + ", idleTimeout="
        + idleTimeout.toMillis()
        + "ms, writeTimeout="
        + writeTimeout.toMillis()
        + "ms}";
  }

  /** Builder; every setter validates and names the key in its error. */
  public static final class Builder {
    private String prefix = "";
    private ProviderKind provider = TransportSettings.PROVIDER.defaultValue();
    private String bindAddress = TransportSettings.BIND_ADDRESS.defaultValue();
    private String device = TransportSettings.DEVICE.defaultValue();
    private int port = TransportSettings.PORT.defaultValue();
    private Duration connectTimeout = TransportSettings.CONNECT_TIMEOUT.defaultValue();
    private Duration readTimeout = TransportSettings.READ_TIMEOUT.defaultValue();
    private Duration peerBackoff = TransportSettings.PEER_BACKOFF.defaultValue();
    private Duration connectionIdleTimeout =
        TransportSettings.CONNECTION_IDLE_TIMEOUT.defaultValue();
    private int maxOutstandingRequests = TransportSettings.MAX_OUTSTANDING_REQUESTS.defaultValue();
    private long maxOutstandingBytes = TransportSettings.MAX_OUTSTANDING_BYTES.defaultValue();
    private int maxTransferSize =
        Math.toIntExact(TransportSettings.MAX_TRANSFER_SIZE.defaultValue());
    private int maxSegmentSize = Math.toIntExact(TransportSettings.MAX_SEGMENT_SIZE.defaultValue());
    private long registrationBudget = TransportSettings.REGISTRATION_BUDGET.defaultValue();
    private long poolMaxBytes = TransportSettings.POOL_MAX_BYTES.defaultValue();
    private int ioThreads = TransportSettings.IO_THREADS.defaultValue();
    private byte[] authSecret;
    private int maxConnections = TransportSettings.MAX_CONNECTIONS.defaultValue();
    private Duration idleTimeout = TransportSettings.IDLE_TIMEOUT.defaultValue();
    private Duration writeTimeout = TransportSettings.WRITE_TIMEOUT.defaultValue();

    private Builder() {}

    /** Prefix shown in error messages (for example {@code spark.shuffle.rdma.}). */
    public Builder prefix(String p) {
      this.prefix = p;
      return this;
    }

    /** Sets a key by name from its string form, as in a properties file. */
    public Builder set(String name, String value) {
      BiConsumer<Builder, Object> binding = BINDINGS.get(name);
      if (binding == null) {
        throw new TransferConfigException(
            TransferConfigException.Problem.UNKNOWN_KEY,
            prefix + name,
            "unknown configuration key " + prefix + name + "; known keys: " + KEYS.keySet());
      }
      binding.accept(this, KEYS.get(name).setting().parse(prefix, value));
      return this;
    }

    public Builder provider(ProviderKind p) {
      this.provider = TransportSettings.PROVIDER.check(prefix, p);
      return this;
    }

    public Builder bindAddress(String a) {
      this.bindAddress = TransportSettings.BIND_ADDRESS.parse(prefix, a);
      return this;
    }

    public Builder device(String d) {
      this.device = d == null || d.isBlank() ? null : d.trim();
      return this;
    }

    public Builder port(int p) {
      this.port = TransportSettings.PORT.check(prefix, p);
      return this;
    }

    public Builder connectTimeout(Duration d) {
      this.connectTimeout = TransportSettings.CONNECT_TIMEOUT.check(prefix, d);
      return this;
    }

    public Builder readTimeout(Duration d) {
      this.readTimeout = TransportSettings.READ_TIMEOUT.check(prefix, d);
      return this;
    }

    public Builder peerBackoff(Duration d) {
      this.peerBackoff = TransportSettings.PEER_BACKOFF.check(prefix, d);
      return this;
    }

    /** Idle outgoing connections are closed after {@code d}; zero keeps them. */
    public Builder connectionIdleTimeout(Duration d) {
      this.connectionIdleTimeout = TransportSettings.CONNECTION_IDLE_TIMEOUT.check(prefix, d);
      return this;
    }

    public Builder maxOutstandingRequests(int n) {
      this.maxOutstandingRequests = TransportSettings.MAX_OUTSTANDING_REQUESTS.check(prefix, n);
      return this;
    }

    public Builder maxOutstandingBytes(long n) {
      this.maxOutstandingBytes = TransportSettings.MAX_OUTSTANDING_BYTES.check(prefix, n);
      return this;
    }

    public Builder maxTransferSize(int n) {
      TransportSettings.MAX_TRANSFER_SIZE.check(prefix, (long) n);
      this.maxTransferSize = n;
      return this;
    }

    public Builder maxSegmentSize(int n) {
      TransportSettings.MAX_SEGMENT_SIZE.check(prefix, (long) n);
      this.maxSegmentSize = n;
      return this;
    }

    public Builder registrationBudget(long n) {
      this.registrationBudget = TransportSettings.REGISTRATION_BUDGET.check(prefix, n);
      return this;
    }

    public Builder poolMaxBytes(long n) {
      this.poolMaxBytes = TransportSettings.POOL_MAX_BYTES.check(prefix, n);
      return this;
    }

    public Builder ioThreads(int n) {
      this.ioThreads = TransportSettings.IO_THREADS.check(prefix, n);
      return this;
    }

    public Builder maxConnections(int n) {
      this.maxConnections = TransportSettings.MAX_CONNECTIONS.check(prefix, n);
      return this;
    }

    public Builder idleTimeout(Duration d) {
      this.idleTimeout = TransportSettings.IDLE_TIMEOUT.check(prefix, d);
      return this;
    }

    public Builder writeTimeout(Duration d) {
      this.writeTimeout = TransportSettings.WRITE_TIMEOUT.check(prefix, d);
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
        throw new TransferConfigException(
            prefix
                + MAX_TRANSFER_SIZE
                + "="
                + maxTransferSize
                + " exceeds "
                + prefix
                + MAX_OUTSTANDING_BYTES
                + "="
                + maxOutstandingBytes);
      }
      if (poolMaxBytes > registrationBudget) {
        throw new TransferConfigException(
            prefix
                + POOL_MAX_BYTES
                + "="
                + poolMaxBytes
                + " exceeds "
                + prefix
                + REGISTRATION_BUDGET
                + "="
                + registrationBudget);
      }
      return new TransferConfig(this);
    }
  }

  /**
   * Parses {@code 4096}, {@code 64k}, {@code 1m}, {@code 2g}, {@code 1t}, {@code 1p} (also kb, mb,
   * ...).
   */
  public static long parseBytes(String v) {
    return Units.parseBytes(v);
  }

  /** Parses {@code 500} (ms), {@code 500ms}, {@code 10s}, {@code 2min}, {@code 1h}. */
  public static Duration parseTime(String v) {
    return Units.parseTime(v);
  }
}
