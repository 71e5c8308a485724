package io.memwire.transfer;

import io.memwire.transfer.settings.FabricSettings;
import io.memwire.transfer.settings.Setting;
import io.memwire.transfer.settings.Settings;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.settings.Units;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Validated settings of a {@link TransferNode}: each value and what derives from it (the bind
 * address resolved, sizes as ints). Each key is declared once, as a {@link Setting} in {@link
 * TransportSettings} (name, typed default, parser, range, doc, since); {@link #KEYS} lists them for
 * consumers and docs/CONFIGURATION.md shows the table generated from them. Values are set and
 * checked by a {@link TransferConfigBuilder}. Consumers put their own prefix in front: {@code
 * spark.shuffle.rdma.} in Spark, {@code memwire.flight.} for Flight, {@code memwire.transfer.} for
 * system properties.
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

  // Key names other classes put in their messages; the rest are reached through their Setting.
  public static final String PROVIDER = TransportSettings.PROVIDER.name();
  public static final String BIND_ADDRESS = TransportSettings.BIND_ADDRESS.name();
  public static final String DEVICE = FabricSettings.DEVICE.name();
  public static final String PORT = TransportSettings.PORT.name();
  public static final String CONNECTION_IDLE_TIMEOUT =
      TransportSettings.CONNECTION_IDLE_TIMEOUT.name();
  public static final String REGISTRATION_BUDGET = TransportSettings.REGISTRATION_BUDGET.name();
  public static final String AUTH_SECRET = TransportSettings.AUTH_SECRET.name();
  public static final String MAX_CONNECTIONS = TransportSettings.MAX_CONNECTIONS.name();

  /** Every key, in documentation order. */
  public static final Map<String, Key> KEYS;

  static {
    Map<String, Key> k = new LinkedHashMap<>();
    for (Setting<?> s : TransportSettings.ALL) {
      k.put(s.name(), new Key(s));
    }
    KEYS = Collections.unmodifiableMap(k);
  }

  /** The checked value of each setting that has one; an unset optional setting is absent. */
  private final Map<Setting<?>, Object> values;

  /**
   * Held apart from {@link #values}: a secret given as bytes need not be text, while its {@link
   * TransportSettings#AUTH_SECRET} is declared as text for the properties form.
   */
  private final byte[] authSecret;

  TransferConfig(Map<Setting<?>, Object> values, byte[] authSecret) {
    this.values = Map.copyOf(values);
    this.authSecret = authSecret;
  }

  /** A builder with every default; see {@link TransferConfigBuilder}. */
  public static TransferConfigBuilder builder() {
    return new TransferConfigBuilder();
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
    TransferConfigBuilder b = builder().prefix(prefix);
    for (Map.Entry<String, String> e : props.entrySet()) {
      if (e.getKey().startsWith(prefix)) {
        b.set(e.getKey().substring(prefix.length()), e.getValue());
      }
    }
    return b.build();
  }

  /** A builder holding these values. */
  public TransferConfigBuilder toBuilder() {
    return TransferConfigBuilder.of(values, authSecret);
  }

  /**
   * The value of {@code setting}, one of {@link TransportSettings#ALL}; null for an unset optional
   * setting. The auth secret is read with {@link #authSecret()}.
   */
  @SuppressWarnings("unchecked")
  public <T> T get(Setting<T> setting) {
    return (T) values.get(setting);
  }

  public ProviderKind provider() {
    return get(TransportSettings.PROVIDER);
  }

  public String bindAddress() {
    return get(TransportSettings.BIND_ADDRESS);
  }

  /** The RDMA device (verbs: its name; ucx: {@code name[:port]}), if one was given. */
  public Optional<String> device() {
    return Optional.ofNullable(get(FabricSettings.DEVICE));
  }

  /** The RoCE GID index, if one was given. */
  public Optional<Integer> gidIndex() {
    return Optional.ofNullable(get(FabricSettings.GID_INDEX));
  }

  /** The RoCE v2 traffic class byte, if one was given. */
  public Optional<Integer> trafficClass() {
    return Optional.ofNullable(get(FabricSettings.TRAFFIC_CLASS));
  }

  /** The InfiniBand service level, if one was given. */
  public Optional<Integer> serviceLevel() {
    return Optional.ofNullable(get(FabricSettings.SERVICE_LEVEL));
  }

  public int port() {
    return get(TransportSettings.PORT);
  }

  public Duration connectTimeout() {
    return get(TransportSettings.CONNECT_TIMEOUT);
  }

  public Duration readTimeout() {
    return get(TransportSettings.READ_TIMEOUT);
  }

  /** How long a peer that could not be connected to is refused at once; zero: never. */
  public Duration peerBackoff() {
    return get(TransportSettings.PEER_BACKOFF);
  }

  /**
   * How long an outgoing connection may go without reads and without being handed out before the
   * node closes it; zero: never.
   */
  public Duration connectionIdleTimeout() {
    return get(TransportSettings.CONNECTION_IDLE_TIMEOUT);
  }

  public int maxOutstandingRequests() {
    return get(TransportSettings.MAX_OUTSTANDING_REQUESTS);
  }

  public long maxOutstandingBytes() {
    return get(TransportSettings.MAX_OUTSTANDING_BYTES);
  }

  /** Fits an int: the setting's upper bound is 64m. */
  public int maxTransferSize() {
    return Math.toIntExact(get(TransportSettings.MAX_TRANSFER_SIZE));
  }

  /** Fits an int: the setting's upper bound is Integer.MAX_VALUE. */
  public int maxSegmentSize() {
    return Math.toIntExact(get(TransportSettings.MAX_SEGMENT_SIZE));
  }

  public long registrationBudget() {
    return get(TransportSettings.REGISTRATION_BUDGET);
  }

  public long poolMaxBytes() {
    return get(TransportSettings.POOL_MAX_BYTES);
  }

  public int ioThreads() {
    return get(TransportSettings.IO_THREADS);
  }

  /** tcp: most connections served at once. */
  public int maxConnections() {
    return get(TransportSettings.MAX_CONNECTIONS);
  }

  /** tcp: how long a served connection may stay idle before it is closed. */
  public Duration idleTimeout() {
    return get(TransportSettings.IDLE_TIMEOUT);
  }

  /** tcp: how long a served connection may make no write progress before it is closed. */
  public Duration writeTimeout() {
    return get(TransportSettings.WRITE_TIMEOUT);
  }

  /** verbs without a secret: whether the node tells and asks MTUs in an open TCP handshake. */
  public boolean mtuHandshake() {
    return get(FabricSettings.MTU_HANDSHAKE);
  }

  /** The shared secret, if any (a copy). */
  public Optional<byte[]> authSecret() {
    return Optional.ofNullable(authSecret).map(byte[]::clone);
  }

  /** The bind address resolved to an IP; a wildcard address is refused. */
  public InetAddress resolveBindAddress() {
    String bindAddress = bindAddress();
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
        + provider()
        + ", bind="
        + bindAddress()
        + ":"
        + port()
        + device().map(d -> ", device=" + d).orElse("")
        + ", connectTimeout="
        + connectTimeout().toMillis()
        + "ms, readTimeout="
        + readTimeout().toMillis()
        + "ms, peerBackoff="
        + peerBackoff().toMillis()
        + "ms, connectionIdleTimeout="
        + connectionIdleTimeout().toMillis()
        + "ms, maxOutstanding="
        + maxOutstandingRequests()
        + "/"
        + maxOutstandingBytes()
        + "B, maxTransfer="
        + maxTransferSize()
        + ", maxSegment="
        + maxSegmentSize()
        + ", budget="
        + registrationBudget()
        + ", pool="
        + poolMaxBytes()
        + ", ioThreads="
        + ioThreads()
        + ", auth="
        + (authSecret != null)
        + ", maxConnections="
        + maxConnections()
        + ", idleTimeout="
        + idleTimeout().toMillis()
        + "ms, writeTimeout="
        + writeTimeout().toMillis()
        + "ms}";
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
