package io.memwire.shuffle.service;

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
  /** Prefix of the service's own keys. */
  public static final String PREFIX = "memwire.shuffle.service.";

  /** Prefix of the transfer node's keys ({@link TransferConfig}'s names). */
  public static final String TRANSFER_PREFIX = PREFIX + "transfer.";

  private static final String V020 = "0.2.0";

  /** The socket executors and the service meet on when none is configured. */
  public static Path defaultSocket() {
    return Path.of(System.getProperty("java.io.tmpdir"), "memwire-shuffle-service", "service.sock");
  }

  public static final Setting<String> SOCKET =
      Setting.key("socket")
          .since(V020)
          .doc(
              "Unix domain socket the service listens on for the executors of its node "
                  + "(spark.shuffle.rdma.service.socket must name the same path).")
          .text("a file path", (key, s) -> s)
          .optional("(java.io.tmpdir)/memwire-shuffle-service/service.sock");

  public static final Setting<String> DIR =
      Setting.key("dir")
          .since(V020)
          .doc(
              "Directory the service keeps the map outputs it owns in (hard links to the "
                  + "executors' files, so it must be on the same filesystem as spark.local.dir). "
                  + "Emptied at start: a restarted service serves nothing of its previous run.")
          .text("a directory path", (key, s) -> s)
          .optional("(java.io.tmpdir)/memwire-shuffle-service/outputs");

  public static final Setting<Duration> APP_TIMEOUT =
      Setting.key("appTimeout")
          .since(V020)
          .doc(
              "An application whose driver does not accept a TCP connection on its RPC port for "
                  + "this long is over: its outputs are deregistered, unmapped and deleted. A port "
                  + "that refuses every probe (the driver has stopped) ends it sooner, after this "
                  + "or 5 s, whichever is shorter.")
          .duration(1000, 86_400_000L)
          .withDefault("60s");

  public static final Setting<String> ALLOWED_USERS =
      Setting.key("allowedUsers")
          .since(V020)
          .doc(
              "Comma-separated users whose processes may register with the service (checked with "
                  + "the socket's peer credentials); * admits every local user (for multi-user "
                  + "clusters such as secure YARN: each output must still belong to the user that "
                  + "hands it over, and each application is bound to its token).")
          .text("user names", (key, s) -> s)
          .optional("(the service's own user)");

  public static final Setting<Integer> MAX_CLIENTS =
      Setting.key("maxClients")
          .since(V020)
          .doc("Most executor connections served at once; more are refused.")
          .count(1, 4096)
          .withDefault("512");

  /** The service's own settings, in documentation order. */
  public static final List<Setting<?>> OWN =
      List.of(SOCKET, DIR, APP_TIMEOUT, ALLOWED_USERS, MAX_CLIENTS);

  private final Path socket;
  private final Path dir;
  private final Duration appTimeout;
  private final Set<String> allowedUsers;
  private final int maxClients;
  private final TransferConfig transfer;

  private ServiceConfig(
      Path socket,
      Path dir,
      Duration appTimeout,
      Set<String> allowedUsers,
      int maxClients,
      TransferConfig transfer) {
    this.socket = socket;
    this.dir = dir;
    this.appTimeout = appTimeout;
    this.allowedUsers = allowedUsers;
    this.maxClients = maxClients;
    this.transfer = transfer;
  }

  /**
   * Reads and validates every key under {@value #PREFIX}.
   *
   * @throws TransferConfigException naming the first unknown or bad key
   */
  public static ServiceConfig fromProperties(Map<String, String> props) {
    List<String> own = new ArrayList<>();
    for (Setting<?> s : OWN) {
      own.add(s.name());
    }
    Map<String, String> mine = new TreeMap<>();
    Map<String, String> transfer = new TreeMap<>();
    for (Map.Entry<String, String> e : props.entrySet()) {
      if (e.getKey().startsWith(TRANSFER_PREFIX)) {
        transfer.put(e.getKey(), e.getValue());
      } else if (e.getKey().startsWith(PREFIX)) {
        mine.put(e.getKey(), e.getValue());
      }
    }
    Settings.refuseUnknown(mine, PREFIX, own);
    String socket = SOCKET.valueIn(mine, PREFIX);
    String dir = DIR.valueIn(mine, PREFIX);
    Path socketPath = socket == null ? defaultSocket() : Path.of(socket);
    Path dirPath =
        dir == null
            ? Path.of(System.getProperty("java.io.tmpdir"), "memwire-shuffle-service", "outputs")
            : Path.of(dir);
    String users = ALLOWED_USERS.valueIn(mine, PREFIX);
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
            PREFIX + ALLOWED_USERS.name(),
            PREFIX + ALLOWED_USERS.name() + " names no user");
      }
    }
    return new ServiceConfig(
        socketPath.toAbsolutePath(),
        dirPath.toAbsolutePath(),
        APP_TIMEOUT.valueIn(mine, PREFIX),
        Set.copyOf(allowed),
        MAX_CLIENTS.valueIn(mine, PREFIX),
        TransferConfig.fromProperties(transfer, TRANSFER_PREFIX));
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

  public int maxClients() {
    return maxClients;
  }

  public TransferConfig transfer() {
    return transfer;
  }

  /** The Markdown table of the service's own keys (docs/SHUFFLE-SERVICE.md shows it). */
  public static String markdownTable() {
    return Settings.markdownTable(
        "| Key | Default | Range | Meaning |",
        "|---|---|---|---|",
        OWN.stream().map(s -> Settings.Row.of(PREFIX, s)).toList());
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
        + ", maxClients="
        + maxClients
        + ", "
        + transfer
        + "}";
  }
}
