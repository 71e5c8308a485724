package io.memwire.shuffle.conf;

import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.Settings;
import io.memwire.transfer.settings.TransportSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The settings of the RDMA shuffle manager as read at start: every key under {@value #PREFIX},
 * validated once. The keys are declared in {@link ShuffleSettings} (the transport's in {@link
 * TransportSettings}); transport keys are {@link TransferConfig}'s, read with this prefix.
 */
public final class ShuffleConf {
  /** Prefix of every key. */
  public static final String PREFIX = "spark.shuffle.rdma.";

  private final TransferConfig transfer;
  private final boolean bindAddressGiven;
  private final boolean fallback;
  private final boolean verifyBlocks;
  private final int readBatchBlocks;
  private final long readBatchBytes;
  private final long indexCacheSize;
  private final boolean allowCleartextReads;
  private final Path serviceSocket;
  private final Duration serviceTimeout;
  private final Set<String> serviceUsers;
  private final Integer serviceResolvePort;
  private final Duration serviceResolveTimeout;

  private ShuffleConf(
      TransferConfig transfer,
      boolean bindAddressGiven,
      boolean fallback,
      boolean verifyBlocks,
      int readBatchBlocks,
      long readBatchBytes,
      long indexCacheSize,
      boolean allowCleartextReads,
      Path serviceSocket,
      Duration serviceTimeout,
      Set<String> serviceUsers,
      Integer serviceResolvePort,
      Duration serviceResolveTimeout) {
    this.serviceUsers = serviceUsers;
    this.serviceResolvePort = serviceResolvePort;
    this.serviceResolveTimeout = serviceResolveTimeout;
    this.allowCleartextReads = allowCleartextReads;
    this.serviceSocket = serviceSocket;
    this.serviceTimeout = serviceTimeout;
    this.transfer = transfer;
    this.bindAddressGiven = bindAddressGiven;
    this.fallback = fallback;
    this.verifyBlocks = verifyBlocks;
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
    Settings.refuseUnknown(sparkConf, PREFIX, ShuffleSettings.KEYS.keySet());
    Map<String, String> transportProps = new TreeMap<>();
    for (Map.Entry<String, String> e : sparkConf.entrySet()) {
      if (e.getKey().startsWith(PREFIX)
          && ShuffleSettings.KEYS.get(e.getKey().substring(PREFIX.length())).isTransport()) {
        transportProps.put(e.getKey(), e.getValue());
      }
    }
    String secretKey = PREFIX + TransferConfig.AUTH_SECRET;
    if (sparkSecret != null && !transportProps.containsKey(secretKey)) {
      transportProps.put(secretKey, sparkSecret);
    }
    TransferConfig transfer = TransferConfig.fromProperties(transportProps, PREFIX);
    return new ShuffleConf(
        transfer,
        sparkConf.containsKey(PREFIX + TransferConfig.BIND_ADDRESS),
        ShuffleSettings.FALLBACK_SETTING.valueIn(sparkConf, PREFIX),
        ShuffleSettings.VERIFY_BLOCKS_SETTING.valueIn(sparkConf, PREFIX),
        ShuffleSettings.READ_BATCH_BLOCKS_SETTING.valueIn(sparkConf, PREFIX),
        ShuffleSettings.READ_BATCH_BYTES_SETTING.valueIn(sparkConf, PREFIX),
        ShuffleSettings.INDEX_CACHE_SIZE_SETTING.valueIn(sparkConf, PREFIX),
        ShuffleSettings.ALLOW_CLEARTEXT_READS_SETTING.valueIn(sparkConf, PREFIX),
        serviceSocket(ShuffleSettings.SERVICE_SOCKET_SETTING.valueIn(sparkConf, PREFIX)),
        ShuffleSettings.SERVICE_TIMEOUT_SETTING.valueIn(sparkConf, PREFIX),
        serviceUsers(ShuffleSettings.SERVICE_USER_SETTING.valueIn(sparkConf, PREFIX)),
        ShuffleSettings.SERVICE_RESOLVE_PORT_SETTING.valueIn(sparkConf, PREFIX),
        ShuffleSettings.SERVICE_RESOLVE_TIMEOUT_SETTING.valueIn(sparkConf, PREFIX));
  }

  private static Set<String> serviceUsers(Set<String> given) {
    return given == null ? ServiceClient.defaultServiceUsers() : given;
  }

  private static Path serviceSocket(String given) {
    return given == null ? ServiceClient.defaultSocket() : Path.of(given).toAbsolutePath();
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

  /** Whether blocks are checked against Spark's shuffle checksums (when Spark writes them). */
  public boolean verifyBlocks() {
    return verifyBlocks;
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

  /** The node's shuffle service socket (used in service mode only). */
  public Path serviceSocket() {
    return serviceSocket;
  }

  /** How long to wait for the node's shuffle service. */
  public Duration serviceTimeout() {
    return serviceTimeout;
  }

  /** The users the node's shuffle service may run as (service mode only). */
  public Set<String> serviceUsers() {
    return serviceUsers;
  }

  /** The services' resolve port (service mode), or empty when re-resolving is off. */
  public java.util.OptionalInt serviceResolvePort() {
    return serviceResolvePort == null
        ? java.util.OptionalInt.empty()
        : java.util.OptionalInt.of(serviceResolvePort);
  }

  /** How long re-resolving one pointer may take. */
  public Duration serviceResolveTimeout() {
    return serviceResolveTimeout;
  }

  @Override
  public String toString() {
    return "ShuffleConf{"
        + transfer
        + ", fallback="
        + fallback
        + ", readBatch="
        + readBatchBlocks
        + " blocks/"
        + readBatchBytes
        + " bytes, indexCache="
        + indexCacheSize
        + ", allowCleartextReads="
        + allowCleartextReads
        + ", serviceSocket="
        + serviceSocket
        + "}";
  }
}
