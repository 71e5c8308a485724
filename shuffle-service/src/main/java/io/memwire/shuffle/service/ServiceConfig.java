package io.memwire.shuffle.service;

import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.Setting;
import io.memwire.transfer.settings.Settings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The shuffle service's settings: its own keys under {@value #PREFIX} and the embedded transfer
 * node's under {@value #TRANSFER_PREFIX} (the same keys executors use under {@code
 * spark.shuffle.rdma.}). Validated once at start; an unknown or bad key fails naming the key.
 */
public final class ServiceConfig {
  private static final String PREFIX = ServiceSettings.PREFIX;
  private static final String TRANSFER_PREFIX = ServiceSettings.TRANSFER_PREFIX;

  /**
   * What one user, one application and the whole node may hold at once; {@link Long#MAX_VALUE}
   * where the node itself sets no limit of its own (bytes: the transfer node's budget).
   */
  public record Quota(int clients, long outputs, long bytes) {
    /** This quota with {@code outputs} instead. */
    Quota withOutputs(long outputs) {
      return new Quota(clients, outputs, bytes);
    }
  }

  /**
   * The per-user and per-application limits as configured: a null field is derived from the node's
   * limits as they are in effect ({@link #userQuota()}, {@link #applicationQuota()}).
   */
  private record Shares(
      boolean oneUser,
      Integer clientsPerUser,
      Long outputsPerUser,
      Long bytesPerUser,
      Integer clientsPerApplication,
      Long outputsPerApplication,
      Long bytesPerApplication) {

    /** One user: its share is the node's; several: no user may take more than half. */
    Quota user(Quota node) {
      return new Quota(
          orDefault(clientsPerUser, oneUser ? node.clients() : half(node.clients())),
          orDefault(outputsPerUser, oneUser ? node.outputs() : half(node.outputs())),
          orDefault(bytesPerUser, oneUser ? node.bytes() : half(node.bytes())));
    }

    /** Half of its user's share: one application leaves room for the user's others. */
    Quota application(Quota node) {
      Quota user = user(node);
      return new Quota(
          orDefault(clientsPerApplication, half(user.clients())),
          orDefault(outputsPerApplication, half(user.outputs())),
          orDefault(bytesPerApplication, half(user.bytes())));
    }
  }

  private final Path socket;
  private final Path dir;
  private final Duration appTimeout;
  private final Set<String> allowedUsers;
  private final Quota node;
  private final Shares shares;
  private final int maxApplicationsPerUser;
  private final Duration registerTimeout;
  private final Duration frameTimeout;
  private final Integer httpPort;
  private final String httpHost;
  private final Path recoveryPath;
  private final Integer resolvePort;
  private final TransferConfig transfer;

  private ServiceConfig(
      Path socket,
      Path dir,
      Duration appTimeout,
      Set<String> allowedUsers,
      Quota node,
      Shares shares,
      int maxApplicationsPerUser,
      Duration registerTimeout,
      Duration frameTimeout,
      Integer httpPort,
      String httpHost,
      Path recoveryPath,
      Integer resolvePort,
      TransferConfig transfer) {
    this.resolvePort = resolvePort;
    this.recoveryPath = recoveryPath;
    this.socket = socket;
    this.dir = dir;
    this.appTimeout = appTimeout;
    this.allowedUsers = allowedUsers;
    this.node = node;
    this.shares = shares;
    this.maxApplicationsPerUser = maxApplicationsPerUser;
    this.registerTimeout = registerTimeout;
    this.frameTimeout = frameTimeout;
    this.httpPort = httpPort;
    this.httpHost = httpHost;
    this.transfer = transfer;
  }

  /**
   * Reads and validates every key under {@value #PREFIX}.
   *
   * @throws TransferConfigException naming the first unknown or bad key
   */
  public static ServiceConfig fromProperties(Map<String, String> props) {
    List<String> own = new ArrayList<>();
    for (Setting<?> s : ServiceSettings.OWN) {
      own.add(s.name());
    }
    Map<String, String> mine = new TreeMap<>();
    Map<String, String> transferProps = new TreeMap<>();
    for (Map.Entry<String, String> e : props.entrySet()) {
      if (e.getKey().startsWith(TRANSFER_PREFIX)) {
        transferProps.put(e.getKey(), e.getValue());
      } else if (e.getKey().startsWith(PREFIX)) {
        mine.put(e.getKey(), e.getValue());
      }
    }
    Settings.refuseUnknown(mine, PREFIX, own);
    String socket = ServiceSettings.SOCKET.valueIn(mine, PREFIX);
    String dir = ServiceSettings.DIR.valueIn(mine, PREFIX);
    Path socketPath = socket == null ? ServiceClient.defaultSocket() : Path.of(socket);
    Path dirPath =
        dir == null
            ? Path.of(System.getProperty("java.io.tmpdir"), "memwire-shuffle-service", "outputs")
            : Path.of(dir);
    String users = ServiceSettings.ALLOWED_USERS.valueIn(mine, PREFIX);
    Set<String> allowed = new LinkedHashSet<>();
    if (users == null) {
      allowed.add(System.getProperty("user.name"));
    } else {
      Arrays.stream(users.split(","))
          .map(String::trim)
          .filter(u -> !u.isEmpty())
          .forEach(allowed::add);
      if (allowed.isEmpty()) {
        throw new TransferConfigException(
            TransferConfigException.Problem.OUT_OF_RANGE,
            PREFIX + ServiceSettings.ALLOWED_USERS.name(),
            PREFIX + ServiceSettings.ALLOWED_USERS.name() + " names no user");
      }
    }
    TransferConfig transfer = TransferConfig.fromProperties(transferProps, TRANSFER_PREFIX);
    String recovery = ServiceSettings.RECOVERY_PATH.valueIn(mine, PREFIX);
    if (recovery != null
        && Path.of(recovery)
            .toAbsolutePath()
            .normalize()
            .startsWith(dirPath.toAbsolutePath().normalize())) {
      throw new TransferConfigException(
          TransferConfigException.Problem.OUT_OF_RANGE,
          PREFIX + ServiceSettings.RECOVERY_PATH.name(),
          PREFIX
              + ServiceSettings.RECOVERY_PATH.name()
              + "="
              + recovery
              + " is inside "
              + PREFIX
              + ServiceSettings.DIR.name()
              + ", which the service empties of what it does not recover: choose another "
              + "directory");
    }
    int clients = ServiceSettings.MAX_CLIENTS.valueIn(mine, PREFIX);
    long outputs = ServiceSettings.MAX_OUTPUTS.valueIn(mine, PREFIX);
    Quota node = new Quota(clients, outputs, transfer.registrationBudget());
    Shares shares =
        new Shares(
            allowed.size() == 1 && !allowed.contains("*"),
            ServiceSettings.MAX_CLIENTS_PER_USER.valueIn(mine, PREFIX),
            ServiceSettings.MAX_OUTPUTS_PER_USER.valueIn(mine, PREFIX),
            ServiceSettings.MAX_BYTES_PER_USER.valueIn(mine, PREFIX),
            ServiceSettings.MAX_CLIENTS_PER_APPLICATION.valueIn(mine, PREFIX),
            ServiceSettings.MAX_OUTPUTS_PER_APPLICATION.valueIn(mine, PREFIX),
            ServiceSettings.MAX_BYTES_PER_APPLICATION.valueIn(mine, PREFIX));
    return new ServiceConfig(
        socketPath.toAbsolutePath(),
        dirPath.toAbsolutePath(),
        ServiceSettings.APP_TIMEOUT.valueIn(mine, PREFIX),
        Set.copyOf(allowed),
        node,
        shares,
        ServiceSettings.MAX_APPLICATIONS_PER_USER.valueIn(mine, PREFIX),
        ServiceSettings.REGISTER_TIMEOUT.valueIn(mine, PREFIX),
        ServiceSettings.FRAME_TIMEOUT.valueIn(mine, PREFIX),
        ServiceSettings.HTTP_PORT.valueIn(mine, PREFIX),
        ServiceSettings.HTTP_HOST.valueIn(mine, PREFIX),
        recovery == null ? null : Path.of(recovery).toAbsolutePath().normalize(),
        ServiceSettings.RESOLVE_PORT.valueIn(mine, PREFIX),
        transfer);
  }

  private static int half(int n) {
    return Math.max(1, n / 2);
  }

  private static long half(long n) {
    return Math.max(1, n / 2);
  }

  private static <T> T orDefault(T given, T otherwise) {
    return given == null ? otherwise : given;
  }

  public Path socket() {
    return socket;
  }

  public Path dir() {
    return dir;
  }

  public Duration appTimeout() {
    return appTimeout;
  }

  public Set<String> allowedUsers() {
    return allowedUsers;
  }

  /** True when {@code user} may register ({@code *} in {@link #ALLOWED_USERS} admits anyone). */
  public boolean allows(String user) {
    return allowedUsers.contains("*") || allowedUsers.contains(user);
  }

  /** True when users other than the service's own may connect (the socket is opened to them). */
  public boolean multiUser() {
    return !allowedUsers.equals(Set.of(System.getProperty("user.name")));
  }

  public int maxClients() {
    return node.clients();
  }

  /** The node's limits: clients, outputs and bytes (the transfer node's budget). */
  public Quota nodeQuota() {
    return node;
  }

  /** What one local user may hold: as set, else derived from {@link #nodeQuota()}. */
  public Quota userQuota() {
    return shares.user(node);
  }

  /** What one application may hold: as set, else half of {@link #userQuota()}. */
  public Quota applicationQuota() {
    return shares.application(node);
  }

  /**
   * This configuration with the node's output limit lowered to {@code outputs} (what the process's
   * limits leave room for); the per-user and per-application limits not set follow it.
   */
  public ServiceConfig withMaxOutputs(long outputs) {
    return new ServiceConfig(
        socket,
        dir,
        appTimeout,
        allowedUsers,
        node.withOutputs(outputs),
        shares,
        maxApplicationsPerUser,
        registerTimeout,
        frameTimeout,
        httpPort,
        httpHost,
        recoveryPath,
        resolvePort,
        transfer);
  }

  public int maxApplicationsPerUser() {
    return maxApplicationsPerUser;
  }

  public Duration registerTimeout() {
    return registerTimeout;
  }

  public Duration frameTimeout() {
    return frameTimeout;
  }

  /** The HTTP endpoint's port (0: any free port), or empty when the endpoint is off. */
  /** The TCP port reducers re-resolve old pointers on; empty when off. */
  public java.util.OptionalInt resolvePort() {
    return resolvePort == null
        ? java.util.OptionalInt.empty()
        : java.util.OptionalInt.of(resolvePort);
  }

  public java.util.OptionalInt httpPort() {
    return httpPort == null ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(httpPort);
  }

  /** The address the HTTP endpoint binds to. */
  public String httpHost() {
    return httpHost;
  }

  public TransferConfig transfer() {
    return transfer;
  }

  /** The recovery store's directory, or empty when recovery is off. */
  public java.util.Optional<Path> recoveryPath() {
    return java.util.Optional.ofNullable(recoveryPath);
  }

  /** This configuration with the recovery store in {@code path} (YARN's recovery path). */
  public ServiceConfig withRecoveryPath(Path path) {
    return new ServiceConfig(
        socket,
        dir,
        appTimeout,
        allowedUsers,
        node,
        shares,
        maxApplicationsPerUser,
        registerTimeout,
        frameTimeout,
        httpPort,
        httpHost,
        path.toAbsolutePath().normalize(),
        resolvePort,
        transfer);
  }

  @Override
  public String toString() {
    return "ServiceConfig{socket="
        + socket
        + ", dir="
        + dir
        + ", appTimeout="
        + appTimeout.toMillis()
        + " ms, allowedUsers="
        + allowedUsers
        + ", node="
        + node
        + ", perUser="
        + userQuota()
        + ", perApplication="
        + applicationQuota()
        + ", http="
        + (httpPort == null ? "off" : httpHost + ":" + httpPort)
        + ", recovery="
        + (recoveryPath == null ? "off" : recoveryPath)
        + ", resolvePort="
        + (resolvePort == null ? "off" : resolvePort)
        + ", "
        + transfer
        + "}";
  }
}
