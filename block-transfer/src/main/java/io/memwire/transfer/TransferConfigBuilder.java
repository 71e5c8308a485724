package io.memwire.transfer;

import io.memwire.transfer.settings.FabricSettings;
import io.memwire.transfer.settings.Setting;
import io.memwire.transfer.settings.TransportSettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Builds a {@link TransferConfig}: every setter checks its value with its {@link Setting} and names
 * the key in its error; {@link #build()} checks the rules between keys. Start from {@link
 * TransferConfig#builder()} (all defaults) or {@link TransferConfig#toBuilder()}.
 */
public final class TransferConfigBuilder {
  private String prefix = "";
  private final Map<Setting<?>, Object> values = new HashMap<>();
  private byte[] authSecret;

  TransferConfigBuilder() {
    for (Setting<?> s : TransportSettings.ALL) {
      if (s.defaultValue() != null) {
        values.put(s, s.defaultValue());
      }
    }
  }

  /** Prefix shown in error messages (for example {@code spark.shuffle.rdma.}). */
  public TransferConfigBuilder prefix(String p) {
    this.prefix = p;
    return this;
  }

  /** Sets a key by name from its string form, as in a properties file. */
  public TransferConfigBuilder set(String name, String value) {
    TransferConfig.Key key = TransferConfig.KEYS.get(name);
    if (key == null) {
      throw new TransferConfigException(
          TransferConfigException.Problem.UNKNOWN_KEY,
          prefix + name,
          "unknown configuration key "
              + prefix
              + name
              + "; known keys: "
              + TransferConfig.KEYS.keySet());
    }
    Setting<?> s = key.setting();
    Object parsed = s.parse(prefix, value);
    if (s == TransportSettings.AUTH_SECRET) {
      return authSecret((String) parsed);
    }
    return put(s, parsed);
  }

  /**
   * Sets {@code setting}, one of {@link TransportSettings#ALL} other than the auth secret (see
   * {@link #authSecret(String)}), after checking {@code value} against its range.
   */
  public <T> TransferConfigBuilder set(Setting<T> setting, T value) {
    if (setting == TransportSettings.AUTH_SECRET
        || TransferConfig.KEYS.get(setting.name()) == null
        || TransferConfig.KEYS.get(setting.name()).setting() != setting) {
      throw new IllegalArgumentException(setting.name() + " is not a transfer node setting");
    }
    return put(setting, setting.check(prefix, value));
  }

  private TransferConfigBuilder put(Setting<?> s, Object value) {
    if (value == null) {
      values.remove(s);
    } else {
      values.put(s, value);
    }
    return this;
  }

  private <T> T value(Setting<T> s) {
    @SuppressWarnings("unchecked")
    T v = (T) values.get(s);
    return v;
  }

  public TransferConfigBuilder provider(ProviderKind p) {
    return set(TransportSettings.PROVIDER, p);
  }

  public TransferConfigBuilder bindAddress(String a) {
    return put(TransportSettings.BIND_ADDRESS, TransportSettings.BIND_ADDRESS.parse(prefix, a));
  }

  /** The RDMA device to bind to; null or blank: none. */
  public TransferConfigBuilder device(String d) {
    return put(FabricSettings.DEVICE, d == null ? null : FabricSettings.DEVICE.parse(prefix, d));
  }

  public TransferConfigBuilder port(int p) {
    return set(TransportSettings.PORT, p);
  }

  public TransferConfigBuilder connectTimeout(Duration d) {
    return set(TransportSettings.CONNECT_TIMEOUT, d);
  }

  public TransferConfigBuilder readTimeout(Duration d) {
    return set(TransportSettings.READ_TIMEOUT, d);
  }

  public TransferConfigBuilder peerBackoff(Duration d) {
    return set(TransportSettings.PEER_BACKOFF, d);
  }

  /** Idle outgoing connections are closed after {@code d}; zero keeps them. */
  public TransferConfigBuilder connectionIdleTimeout(Duration d) {
    return set(TransportSettings.CONNECTION_IDLE_TIMEOUT, d);
  }

  public TransferConfigBuilder maxOutstandingRequests(int n) {
    return set(TransportSettings.MAX_OUTSTANDING_REQUESTS, n);
  }

  public TransferConfigBuilder maxOutstandingBytes(long n) {
    return set(TransportSettings.MAX_OUTSTANDING_BYTES, n);
  }

  public TransferConfigBuilder maxTransferSize(int n) {
    return set(TransportSettings.MAX_TRANSFER_SIZE, (long) n);
  }

  public TransferConfigBuilder maxSegmentSize(int n) {
    return set(TransportSettings.MAX_SEGMENT_SIZE, (long) n);
  }

  public TransferConfigBuilder registrationBudget(long n) {
    return set(TransportSettings.REGISTRATION_BUDGET, n);
  }

  public TransferConfigBuilder poolMaxBytes(long n) {
    return set(TransportSettings.POOL_MAX_BYTES, n);
  }

  public TransferConfigBuilder ioThreads(int n) {
    return set(TransportSettings.IO_THREADS, n);
  }

  public TransferConfigBuilder maxConnections(int n) {
    return set(TransportSettings.MAX_CONNECTIONS, n);
  }

  public TransferConfigBuilder idleTimeout(Duration d) {
    return set(TransportSettings.IDLE_TIMEOUT, d);
  }

  public TransferConfigBuilder writeTimeout(Duration d) {
    return set(TransportSettings.WRITE_TIMEOUT, d);
  }

  /** The shared secret as text (UTF-8); null: none. Not trimmed. */
  public TransferConfigBuilder authSecret(String secret) {
    return authSecret(secret == null ? null : secret.getBytes(StandardCharsets.UTF_8));
  }

  /** The shared secret; null: none. */
  public TransferConfigBuilder authSecret(byte[] secret) {
    if (secret != null && secret.length == 0) {
      throw new TransferConfigException(
          TransportSettings.AUTH_SECRET.name(prefix) + " must not be empty when set");
    }
    this.authSecret = secret == null ? null : secret.clone();
    return this;
  }

  public TransferConfig build() {
    refuseAbove(TransportSettings.MAX_TRANSFER_SIZE, TransportSettings.MAX_OUTSTANDING_BYTES);
    refuseAbove(TransportSettings.POOL_MAX_BYTES, TransportSettings.REGISTRATION_BUDGET);
    return new TransferConfig(values, authSecret);
  }

  /** Refuses a value of {@code part} larger than that of {@code whole}, naming both keys. */
  private void refuseAbove(Setting<Long> part, Setting<Long> whole) {
    if (value(part) > value(whole)) {
      throw new TransferConfigException(
          part.name(prefix)
              + "="
              + value(part)
              + " exceeds "
              + whole.name(prefix)
              + "="
              + value(whole));
    }
  }

  /** A builder holding {@code values} and {@code authSecret} (a config's own). */
  static TransferConfigBuilder of(Map<Setting<?>, Object> values, byte[] authSecret) {
    TransferConfigBuilder b = new TransferConfigBuilder();
    b.values.clear();
    b.values.putAll(values);
    b.authSecret = authSecret;
    return b;
  }
}
